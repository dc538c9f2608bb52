"""A public-style WebRTC game server written without any streameval code: plain aiortc,
aiohttp, PyAV and numpy, as in the aiortc examples. JSON ``keydown``/``keyup`` with browser
key names on any data channel; frames carry no metadata. The "world" pans a seeded texture
(a/d, ArrowLeft/ArrowRight) or zooms into it (w/s).

``reverse`` makes every key act the opposite way; ``delay_s`` applies a key that long after
its keydown (a server that responds late).
"""

from __future__ import annotations

import asyncio
import json
import time
from fractions import Fraction
from typing import Any

import aioice.ice
import av
import cv2
import numpy as np
from aiohttp import web
from aiortc import MediaStreamTrack, RTCConfiguration, RTCPeerConnection, RTCSessionDescription

W, H, FPS = 320, 216, 16.0
PAN = {"a": 6.0, "d": -6.0, "ArrowLeft": 6.0, "ArrowRight": -6.0}
ZOOM = {"w": 1.02, "s": 1 / 1.02}


def _texture(seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 255, (90, 240, 3), dtype=np.uint8)
    big = cv2.resize(small, (4 * W, 3 * H), interpolation=cv2.INTER_CUBIC)
    return cv2.GaussianBlur(big, (0, 0), 1.5)


class PanningWorld:
    def __init__(self, reverse: bool, delay_s: float) -> None:
        self.tex = _texture()
        self.x = float(self.tex.shape[1] // 2)
        self.zoom = 1.0
        self.reverse = reverse
        self.delay_s = delay_s
        self.pending: list[tuple[float, str | None]] = []
        self.held: str | None = None

    def key(self, kind: str, key: str) -> None:
        self.pending.append((time.monotonic() + self.delay_s, key if kind == "keydown" else None))

    def render(self) -> np.ndarray:
        now = time.monotonic()
        while self.pending and self.pending[0][0] <= now:
            self.held = self.pending.pop(0)[1]
        sign = -1.0 if self.reverse else 1.0
        if self.held in PAN:
            self.x -= sign * PAN[self.held]  # content moves +dx when the view moves -dx
        if self.held in ZOOM:
            self.zoom *= ZOOM[self.held] ** sign
        cw, ch = W / self.zoom, H / self.zoom
        m = np.float32(
            [
                [1 / self.zoom, 0, self.x - cw / 2],
                [0, 1 / self.zoom, self.tex.shape[0] / 2 - ch / 2],
            ]
        )
        return cv2.warpAffine(
            self.tex,
            m,
            (W, H),
            flags=cv2.WARP_INVERSE_MAP | cv2.INTER_LINEAR,
            borderMode=cv2.BORDER_REFLECT,
        )


class WorldTrack(MediaStreamTrack):
    kind = "video"

    def __init__(self, world: PanningWorld, fps: float = FPS) -> None:
        super().__init__()
        self.world = world
        self.fps = fps
        self.n = 0
        self.t0: float | None = None

    async def recv(self) -> av.VideoFrame:
        if self.t0 is None:
            self.t0 = time.monotonic()
        await asyncio.sleep(max(0.0, self.t0 + self.n / self.fps - time.monotonic()))
        frame = av.VideoFrame.from_ndarray(self.world.render(), format="rgb24")
        frame.pts, frame.time_base = int(self.n * 90000 / self.fps), Fraction(1, 90000)
        self.n += 1
        return frame


async def start_public_server(
    *, reverse: bool = False, delay_s: float = 0.0, fps: float = FPS
) -> tuple[Any, int]:
    """Start on 127.0.0.1 (a free port); return (runner, port). The track streams at ``fps``
    from the start, keys or not, and says its rate nowhere."""
    aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]
    peers: set[RTCPeerConnection] = set()

    async def offer(request: web.Request) -> web.Response:
        params = await request.json()
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        peers.add(pc)
        world = PanningWorld(reverse, delay_s)

        @pc.on("datachannel")
        def on_datachannel(channel: Any) -> None:
            @channel.on("message")
            def on_message(message: str) -> None:
                body = json.loads(message)
                if body["type"] in ("keydown", "keyup"):
                    world.key(body["type"], body["key"])

        pc.addTrack(WorldTrack(world, fps))
        await pc.setRemoteDescription(RTCSessionDescription(params["sdp"], params["type"]))
        await pc.setLocalDescription(await pc.createAnswer())
        return web.json_response({"sdp": pc.localDescription.sdp, "type": pc.localDescription.type})

    async def on_shutdown(app: web.Application) -> None:
        await asyncio.gather(*(pc.close() for pc in peers))

    app = web.Application()
    app.router.add_post("/offer", offer)
    app.on_shutdown.append(on_shutdown)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]

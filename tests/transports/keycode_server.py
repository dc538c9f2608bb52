"""A world-arcade style WebRTC game server written from its public description with plain
aiortc and aiohttp, no streameval code (the world model is handed in: ``chunked_world``).

``POST /offer/{type}/{id}`` with ``{"sdp", "type"}``; the answer comes as a server-sent event
stream (``event: loading`` lines, then ``event: answer``). The browser's data channel is
``controls``; keys are numeric keyCodes (``{"type": "keydown", "key": 87}``), string keys are
ignored; a peer without a ``{"type": "heartbeat"}`` for ``stale_after_s`` (5 s there) is
dropped. Frames come on a video track at 16 fps, generated 9 at a time under the key held at
the chunk's start.

``announce_fps``: a variant (world-arcade itself announces nothing) that says its rate on the
data channel when it opens, ``{"type": "ready", "fps": F}``, and paces its track at it — what a
profile's ``[ready] fps`` reads over WebRTC.
"""

from __future__ import annotations

import asyncio
import json
import time
from fractions import Fraction
from typing import Any

import aioice.ice
import av
from aiohttp import web
from aiortc import MediaStreamTrack, RTCConfiguration, RTCPeerConnection, RTCSessionDescription

from tests.transports.chunked_world import ChunkedWorld

FPS = 16.0
KEYCODES = {87: "W", 83: "S", 65: "A", 68: "D", 37: "L", 39: "R"}


class ChunkTrack(MediaStreamTrack):
    kind = "video"

    def __init__(self, world: ChunkedWorld, fps: float = FPS) -> None:
        super().__init__()
        self.world = world
        self.fps = fps
        self.buffer: list[Any] = []
        self.n = 0
        self.t0: float | None = None

    async def recv(self) -> av.VideoFrame:
        if self.t0 is None:
            self.t0 = time.monotonic()
        if not self.buffer:
            self.buffer, _ = await self.world.generate(self.world.held_now())
        await asyncio.sleep(max(0.0, self.t0 + self.n / self.fps - time.monotonic()))
        frame = av.VideoFrame.from_ndarray(self.buffer.pop(0), format="rgb24")
        frame.pts, frame.time_base = int(self.n * 90000 / self.fps), Fraction(1, 90000)
        self.n += 1
        return frame


async def start_keycode_server(
    model: Any,
    *,
    reverse: bool = False,
    delay_s: float = 0.0,
    stale_after_s: float = 5.0,
    announce_fps: float | None = None,
) -> tuple[web.AppRunner, int]:
    aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]
    peers: set[RTCPeerConnection] = set()

    async def offer(request: web.Request) -> web.StreamResponse:
        params = await request.json()
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        peers.add(pc)
        world = ChunkedWorld(model, 9, reverse=reverse, delay_s=delay_s)
        last_heartbeat = [time.monotonic()]

        @pc.on("datachannel")
        def on_datachannel(channel: Any) -> None:
            if announce_fps is not None:
                channel.send(json.dumps({"type": "ready", "fps": announce_fps}))

            @channel.on("message")
            def on_message(message: Any) -> None:
                if not isinstance(message, str):
                    return
                body = json.loads(message)
                if body.get("type") == "heartbeat":
                    last_heartbeat[0] = time.monotonic()
                elif body.get("type") in ("keydown", "keyup"):
                    key = KEYCODES.get(body.get("key"))  # type: ignore[arg-type]
                    if key is not None:
                        world.hold(key if body["type"] == "keydown" else None)

        async def watch() -> None:
            while pc.connectionState != "closed":
                await asyncio.sleep(0.2)
                if time.monotonic() - last_heartbeat[0] > stale_after_s:
                    await pc.close()  # stale: world-arcade cleans the peer up
                    return

        pc.addTrack(ChunkTrack(world, announce_fps or FPS))
        await pc.setRemoteDescription(RTCSessionDescription(params["sdp"], params["type"]))
        await pc.setLocalDescription(await pc.createAnswer())
        asyncio.get_running_loop().create_task(watch())
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"event: loading\ndata: starting the game\n\n")
        answer = {"sdp": pc.localDescription.sdp, "type": pc.localDescription.type}
        await response.write(f"event: answer\ndata: {json.dumps(answer)}\n\n".encode())
        await response.write_eof()
        return response

    async def on_shutdown(app: web.Application) -> None:
        await asyncio.gather(*(pc.close() for pc in peers))

    app = web.Application()
    app.router.add_post("/offer/{type}/{id}", offer)
    app.on_shutdown.append(on_shutdown)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

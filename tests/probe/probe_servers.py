"""WebSocket servers of unknown conventions for the probe tests, with plain aiohttp and no
streameval code (the frames come from a ``render(motion)`` callable handed in).

Each speaks WorldFoundry's realtime protocol (``configure`` → ``configuring``, ``ready`` with
its fps; ``action`` keydown/keyup; binary JPEG frames paced at ``FPS``; a ``chunk_done`` with
the chunk's ``frames`` after each chunk), generates ``FIRST_CHUNK`` frames first and
``CHUNK`` after (keys are read at chunk starts), and eases its motion: a share of full speed
that rises linearly over ``EASE_IN_S`` after a key is read and falls over ``EASE_OUT_S``.

``keymap``: key name → (forward, right, yaw) at full speed (right > 0 strafes right, yaw > 0
turns right); an unknown name does nothing; ``"-"`` is the motion with no key held.
``fault``: ``no-ready`` (frames stream but ``ready`` never comes), ``close`` (1011 after
``close_after`` frames), ``silent`` (the handshake never answers).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from aiohttp import WSMsgType, web

FPS = 16.0
FIRST_CHUNK = 12
CHUNK = 8
EASE_IN_S = 0.5
EASE_OUT_S = 1.0

Motion = tuple[float, float, float]
USUAL: dict[str, Motion] = {
    "w": (1, 0, 0), "s": (-1, 0, 0), "a": (0, -1, 0), "d": (0, 1, 0),
    "j": (0, 0, -1), "l": (0, 0, 1),
}  # fmt: skip
"""WorldFoundry's letters: w a s d move, j / l turn."""
OTHER: dict[str, Motion] = {
    "w": (1, 0, 0), "s": (-1, 0, 0), "a": (0, 0, -1), "d": (0, 0, 1),
    "j": (0, -1, 0), "l": (0, 1, 0),
}  # fmt: skip
"""The other convention: a / d turn, j / l strafe."""


def jpeg(image: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(image, cv2.COLOR_RGB2BGR), [1, 92])
    assert ok
    return bytes(buf)


def _toward(current: Motion, target: Motion) -> Motion:
    """One frame of easing: each component moves toward the target by its ramp's step."""
    out = []
    for c, t in zip(current, target, strict=True):
        ease = EASE_IN_S if abs(t) > abs(c) else EASE_OUT_S
        step = 1.0 / (ease * FPS)
        out.append(c + max(-step, min(step, t - c)))
    return (out[0], out[1], out[2])


def probe_app(
    render: Callable[[Motion], np.ndarray],
    keymap: dict[str, Motion],
    *,
    fault: str | None = None,
    close_after: int = 60,
    start_from: Callable[[np.ndarray], None] | None = None,
    uploads: Path | None = None,
) -> web.Application:
    """``start_from(image)``: called with a start image that ``configure`` names
    (``session.init_image_path``, a file uploaded to ``POST /api/session/input`` into
    ``uploads``), before the first frame."""

    async def upload(request: web.Request) -> web.Response:
        assert uploads is not None
        field = await (await request.multipart()).next()
        data = await field.read()  # type: ignore[union-attr]
        path = uploads / f"upload-{len(list(uploads.iterdir()))}.img"
        path.write_bytes(data)
        return web.json_response({"path": str(path)})

    async def socket(request: web.Request) -> web.WebSocketResponse:
        if fault == "silent":
            await asyncio.sleep(3600)
        ws = web.WebSocketResponse(max_msg_size=1024**2)
        await ws.prepare(request)
        first = await ws.receive()
        if first.type != WSMsgType.TEXT or json.loads(first.data).get("type") != "configure":
            await ws.close(code=1002, message=b"expected configure")
            return ws
        image_path = (json.loads(first.data).get("session") or {}).get("init_image_path")
        if image_path and start_from is not None:
            bgr = cv2.imread(str(image_path), cv2.IMREAD_COLOR)
            start_from(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
        await ws.send_str(json.dumps({"type": "configuring"}))
        if fault != "no-ready":
            await ws.send_str(json.dumps({"type": "ready", "fps": FPS}))
        state: dict[str, Any] = {"held": None, "sent": 0}
        queue: asyncio.Queue[bytes | str] = asyncio.Queue()

        async def generate() -> None:
            velocity: Motion = (0.0, 0.0, 0.0)
            size = FIRST_CHUNK
            while not ws.closed:
                while queue.qsize() > 2:
                    await asyncio.sleep(0.01)
                held = state["held"]
                target = keymap.get(held, (0.0, 0.0, 0.0)) if held else keymap.get("-", (0, 0, 0))
                frames = []
                for _ in range(size):
                    velocity = _toward(velocity, target)
                    frames.append(jpeg(await asyncio.to_thread(render, velocity)))
                for data in frames:
                    queue.put_nowait(data)
                queue.put_nowait(json.dumps({"type": "chunk_done", "frames": size}))
                size = CHUNK

        async def paced() -> None:
            """Frame n leaves at t0 + n / FPS: a late frame is caught up, never skipped in
            time, so the server delivers FPS on average whatever the machine's load."""
            t0: float | None = None
            while not ws.closed:
                item = await queue.get()
                if isinstance(item, str):
                    await ws.send_str(item)
                    continue
                t0 = time.monotonic() if t0 is None else t0
                await asyncio.sleep(max(0.0, t0 + state["sent"] / FPS - time.monotonic()))
                await ws.send_bytes(item)
                state["sent"] += 1
                if fault == "close" and state["sent"] >= close_after:
                    await ws.close(code=1011, message=b"worker crashed")
                    return

        tasks = [asyncio.create_task(generate()), asyncio.create_task(paced())]
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                body = json.loads(msg.data)
                if body.get("type") != "action":
                    continue
                action = body["action"]
                if action.get("event") == "keydown":
                    state["held"] = str(action.get("key"))
                elif action.get("event") == "keyup" and state["held"] == str(action.get("key")):
                    state["held"] = None
        finally:
            for task in tasks:
                task.cancel()
        return ws

    app = web.Application()
    app.router.add_get("/api/realtime/ws", socket)
    if uploads is not None:
        app.router.add_post("/api/session/input", upload)
    return app


async def start(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


KEYCODE_USUAL: dict[str, Motion] = {
    "87": (1, 0, 0), "83": (-1, 0, 0), "65": (0, -1, 0), "68": (0, 1, 0),
    "37": (0, 0, -1), "39": (0, 0, 1),
}  # fmt: skip
"""world-arcade's keyCodes: W S A D move, the left and right arrows turn."""
KEYCODE_QE: dict[str, Motion] = {
    "87": (1, 0, 0), "83": (-1, 0, 0), "65": (0, 0, -1), "68": (0, 0, 1),
    "81": (0, -1, 0), "69": (0, 1, 0),
}  # fmt: skip
"""A keyCode server where A / D turn and Q / E strafe."""


async def start_keycode_probe_server(
    render: Callable[[Motion], np.ndarray], keymap: dict[str, Motion]
) -> tuple[web.AppRunner, int]:
    """world-arcade's WebRTC style (``POST /offer/{type}/{id}``, the answer as a server-sent
    event, numeric keyCodes on a ``controls`` data channel, a video track at ``FPS``), with
    this module's chunks and easing; ``keymap`` is keyed by the keyCode's digits."""
    from fractions import Fraction

    import aioice.ice
    import av
    from aiortc import (
        MediaStreamTrack,
        RTCConfiguration,
        RTCPeerConnection,
        RTCSessionDescription,
    )

    aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]
    peers: set[Any] = set()

    class EasedTrack(MediaStreamTrack):  # type: ignore[misc]
        kind = "video"

        def __init__(self, held: dict[str, str | None]) -> None:
            super().__init__()
            self.held = held
            self.buffer: list[np.ndarray] = []
            self.velocity: Motion = (0.0, 0.0, 0.0)
            self.size = FIRST_CHUNK
            self.n = 0
            self.t0: float | None = None

        async def recv(self) -> Any:
            if self.t0 is None:
                self.t0 = time.monotonic()
            if not self.buffer:
                name = self.held["key"]
                target = keymap.get(name, (0.0, 0.0, 0.0)) if name else (0.0, 0.0, 0.0)
                for _ in range(self.size):
                    self.velocity = _toward(self.velocity, target)
                    self.buffer.append(await asyncio.to_thread(render, self.velocity))
                self.size = CHUNK
            await asyncio.sleep(max(0.0, self.t0 + self.n / FPS - time.monotonic()))
            frame = av.VideoFrame.from_ndarray(self.buffer.pop(0), format="rgb24")
            frame.pts, frame.time_base = self.n * 90000 // int(FPS), Fraction(1, 90000)
            self.n += 1
            return frame

    async def offer(request: web.Request) -> web.StreamResponse:
        params = await request.json()
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        peers.add(pc)
        held: dict[str, str | None] = {"key": None}

        @pc.on("datachannel")
        def on_datachannel(channel: Any) -> None:
            @channel.on("message")
            def on_message(message: Any) -> None:
                body = json.loads(message) if isinstance(message, str) else {}
                if body.get("type") == "keydown":
                    held["key"] = str(body.get("key"))
                elif body.get("type") == "keyup" and held["key"] == str(body.get("key")):
                    held["key"] = None

        pc.addTrack(EasedTrack(held))
        await pc.setRemoteDescription(RTCSessionDescription(params["sdp"], params["type"]))
        await pc.setLocalDescription(await pc.createAnswer())
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        answer = {"sdp": pc.localDescription.sdp, "type": pc.localDescription.type}
        await response.write(f"event: answer\ndata: {json.dumps(answer)}\n\n".encode())
        await response.write_eof()
        return response

    async def on_shutdown(app: web.Application) -> None:
        await asyncio.gather(*(pc.close() for pc in peers))

    app = web.Application()
    app.router.add_post("/offer/{type}/{id}", offer)
    app.on_shutdown.append(on_shutdown)
    return await start(app)

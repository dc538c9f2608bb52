"""MJPEG servers whose keys are presses, written from the public descriptions with plain
aiohttp and no streameval code (the world model is handed in: ``chunked_world``).

- ``press``: the Matrix-Game 2 streaming servers: MJPEG on ``GET /stream``, keys on a
  WebSocket ``/ws`` as ``{"type": "keyboard", "key": "w", "timestamp": ...}``; one press makes
  one generated block (12 frames), there is no keyup; with no press waiting, the block is idle.
- ``gamecraft``: the Hunyuan-GameCraft streaming APIs: MJPEG on ``GET /video/0``,
  ``POST /control/0`` with ``{"action": "w", "speed": 0.2}``; one press, one 9-frame chunk.

Each block is sent as one burst as soon as it is rendered, then the server waits out the
block's playing time (its frames are played at 16 fps on average).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from aiohttp import WSMsgType, web

from tests.transports.chunked_world import ChunkedWorld, jpeg

FPS = 16.0
BOUNDARY = "frame"
NAMES = {"w": "W", "s": "S", "a": "A", "d": "D", "left": "L", "right": "R"}


class _Stream:
    """The block generator and the MJPEG clients it feeds."""

    def __init__(self, world: ChunkedWorld) -> None:
        self.world = world
        self.clients: set[asyncio.Queue[bytes]] = set()
        self.task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        while True:
            start = time.monotonic()
            key = self.world.next_press() or "-"
            frames, _ = await self.world.generate(key)
            for image in frames:
                data = jpeg(image)
                for q in list(self.clients):
                    q.put_nowait(data)
            await asyncio.sleep(max(0.0, start + self.world.chunk / FPS - time.monotonic()))

    async def video(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": f"multipart/x-mixed-replace; boundary={BOUNDARY}"}
        )
        await response.prepare(request)
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.clients.add(queue)
        if self.task is None:
            self.task = asyncio.create_task(self.run())
        try:
            while True:
                body = await queue.get()
                await response.write(
                    f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(body)}"
                    f"\r\n\r\n".encode()
                    + body
                    + b"\r\n"
                )
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.clients.discard(queue)
        return response

    async def stop(self, app: web.Application) -> None:
        if self.task is not None:
            self.task.cancel()


def press_app(model: Any, *, reverse: bool = False, delay_s: float = 0.0) -> web.Application:
    stream = _Stream(ChunkedWorld(model, 12, reverse=reverse, delay_s=delay_s))

    async def keys(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                continue
            body = json.loads(msg.data)
            if body.get("type") == "keyboard" and body.get("key") in NAMES:
                stream.world.press(NAMES[body["key"]])
        return ws

    app = web.Application()
    app.router.add_get("/stream", stream.video)
    app.router.add_get("/ws", keys)
    app.on_shutdown.append(stream.stop)
    return app


def gamecraft_app(model: Any, *, reverse: bool = False, delay_s: float = 0.0) -> web.Application:
    stream = _Stream(ChunkedWorld(model, 9, reverse=reverse, delay_s=delay_s))

    async def control(request: web.Request) -> web.Response:
        body = json.loads(await request.text())
        if body.get("action") in NAMES and isinstance(body.get("speed"), int | float):
            stream.world.press(NAMES[body["action"]])
            return web.json_response({"ok": True})
        return web.json_response({"ok": False}, status=400)

    app = web.Application()
    app.router.add_get("/video/0", stream.video)
    app.router.add_post("/control/0", control)
    app.on_shutdown.append(stream.stop)
    return app

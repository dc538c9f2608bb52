"""A plain aiohttp MJPEG server (no streameval code): ``GET /video_feed`` streams
``multipart/x-mixed-replace`` JPEG parts of the panning world at 16 fps; ``POST /keys`` takes
the JSON keydown/keyup bodies. ``corrupt_every`` sends a part that is not a JPEG."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import cv2
from aiohttp import web

from tests.transports.public_server import FPS, PanningWorld

BOUNDARY = "frame"


async def start_mjpeg_server(*, corrupt_every: int = 0) -> tuple[Any, int]:
    world = PanningWorld(reverse=False, delay_s=0.0)

    async def video_feed(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": f"multipart/x-mixed-replace; boundary={BOUNDARY}"}
        )
        await response.prepare(request)
        t0, n = time.monotonic(), 0
        try:
            while True:
                await asyncio.sleep(max(0.0, t0 + n / FPS - time.monotonic()))
                bgr = cv2.cvtColor(world.render(), cv2.COLOR_RGB2BGR)
                _ok, jpeg = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, 92])
                body = b"not a jpeg" if corrupt_every and n % corrupt_every == 5 else bytes(jpeg)
                await response.write(
                    f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(body)}"
                    f"\r\n\r\n".encode()
                    + body
                    + b"\r\n"
                )
                n += 1
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        return response

    async def keys(request: web.Request) -> web.Response:
        body = json.loads(await request.text())
        if body["type"] in ("keydown", "keyup"):
            world.key(body["type"], body["key"])
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_get("/video_feed", video_feed)
    app.router.add_post("/keys", keys)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]

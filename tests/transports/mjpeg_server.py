"""A plain aiohttp MJPEG server (no streameval code): ``GET /video_feed`` streams
``multipart/x-mixed-replace`` JPEG parts of the panning world at 16 fps; ``POST /keys`` takes
the JSON keydown/keyup bodies. ``corrupt_every`` sends a part that is not a JPEG; ``fps`` plays
at another rate than the 16 fps the evaluator assumes (a slow server); ``model`` serves a
stepped model (the procedural world) instead of the panning texture."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import cv2
from aiohttp import web

from tests.transports.public_server import FPS, PanningWorld

BOUNDARY = "frame"
OUR_KEY = {"w": "W", "s": "S", "a": "A", "d": "D", "ArrowLeft": "L", "ArrowRight": "R"}


class SteppedWorld:
    """A model with ``step(key) -> frame`` (``frame.image`` RGB) played at the server's own
    rate under the key held last, as a browser game would."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.held = "-"

    def key(self, kind: str, key: str) -> None:
        self.held = OUR_KEY.get(key, "-") if kind == "keydown" else "-"

    def render(self) -> Any:
        return self.model.step(self.held).image


async def start_mjpeg_server(
    *, corrupt_every: int = 0, fps: float = FPS, model: Any = None
) -> tuple[Any, int]:
    world: Any = PanningWorld(reverse=False, delay_s=0.0) if model is None else SteppedWorld(model)

    async def video_feed(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": f"multipart/x-mixed-replace; boundary={BOUNDARY}"}
        )
        await response.prepare(request)
        t0, n = time.monotonic(), 0
        try:
            while True:
                await asyncio.sleep(max(0.0, t0 + n / fps - time.monotonic()))
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

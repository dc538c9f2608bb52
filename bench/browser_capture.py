"""Which browser capture gives more of a web page's frames at 640×360
(docs/benchmarks.md#browser-capture): the compositor's screencast (``Page.startScreencast``,
each frame acked, cropped to the element) against the element captured again and again
(``Page.captureScreenshot`` clipped to it), both JPEG at the transport's quality.

The page is the tests' canvas world (``tests/transports/browser/world.html``) drawing at
``--fps`` (default 60, above what either capture keeps up with) and turning all the time
(ArrowRight held), so every frame it draws differs from the last; a capture's rate is its
distinct pictures per second, the only ones the transport keeps.

Usage: python bench/browser_capture.py [--fps N] [--seconds S]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import sys
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streameval.transports.browser.cdp import CdpSession, launch
from streameval.transports.browser.page import Box, element_expression, key_event

PAGE = Path(__file__).resolve().parent.parent / "tests/transports/browser/world.html"
QUALITY = 90


def decode(data: str) -> np.ndarray:
    raw = np.frombuffer(base64.b64decode(data), np.uint8)
    return np.asarray(cv2.imdecode(raw, cv2.IMREAD_COLOR))


async def screencast(cdp: CdpSession, box: Box, seconds: float) -> tuple[int, int]:
    distinct, total, last = 0, 0, None
    acks: list[asyncio.Future[Any]] = []

    def on(params: dict[str, Any]) -> None:
        nonlocal distinct, total, last
        ack = cdp.call("Page.screencastFrameAck", {"sessionId": params["sessionId"]})
        acks.append(asyncio.ensure_future(ack))
        image = decode(params["data"])
        x0, y0, x1, y1 = box.crop(image.shape[1], params["metadata"]["deviceWidth"])
        crop = image[y0:y1, x0:x1]
        total += 1
        if last is None or not np.array_equal(crop, last):
            distinct += 1
        last = crop

    cdp.on("Page.screencastFrame", on)
    await cdp.call("Page.startScreencast", {"format": "jpeg", "quality": QUALITY})
    await asyncio.sleep(seconds)
    await cdp.call("Page.stopScreencast")
    cdp.handlers.pop("Page.screencastFrame")
    return distinct, total


async def screenshots(cdp: CdpSession, box: Box, seconds: float) -> tuple[int, int]:
    clip = {"x": box.x, "y": box.y, "width": box.width, "height": box.height, "scale": 1}
    params = {"format": "jpeg", "quality": QUALITY, "clip": clip, "optimizeForSpeed": True}
    distinct, total, last = 0, 0, None
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        image = decode((await cdp.call("Page.captureScreenshot", params))["data"])
        total += 1
        if last is None or not np.array_equal(image, last):
            distinct += 1
        last = image
    return distinct, total


async def main(fps: float, seconds: float) -> None:
    app = web.Application()
    app.router.add_get("/world.html", lambda _: web.FileResponse(PAGE))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    browser = await launch((1280, 800))
    try:
        cdp = await browser.open_page((await browser.targets())[0])
        await cdp.call("Page.enable")
        await cdp.call("Page.navigate", {"url": f"http://127.0.0.1:{port}/world.html?fps={fps}"})
        await asyncio.sleep(1.0)
        box = Box.of(await cdp.evaluate(element_expression("#world")))
        await cdp.call("Input.dispatchKeyEvent", key_event("ArrowRight", "keydown"))
        print(
            f"page drawing at {fps:g} fps, element {box.width:g}x{box.height:g}, {seconds:g} s each"
        )
        for name, capture in (("screencast", screencast), ("screenshot", screenshots)):
            distinct, total = await capture(cdp, box, seconds)
            print(f"  {name:11s} {distinct / seconds:6.1f} distinct frames/s ({total} captured)")
        await cdp.close()
    finally:
        await browser.close()
        await runner.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fps", type=float, default=60.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    asyncio.run(main(args.fps, args.seconds))

"""The WebSocket path of ``transport_latency.py``: streameval's added key-to-frame latency
over a loopback aiohttp WebSocket server, against plain aiohttp on the same server.

The server answers every key message at once with one binary 640×432 JPEG (a model that
costs nothing). The plain client sends the key text, waits for the binary message and decodes
it (OpenCV, RGB), which is the floor any evaluator pays; streameval's ``WebSocketSource`` does
the same through its profile's template, message classification, admission, chunk log and
event queue, up to the ``FrameEvent`` the pipeline reads. Both run in alternating blocks of one
process, so both see the same machine load.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
from aiohttp import WSMsgType, web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import serve_websocket
from streameval.core.events import FrameEvent
from streameval.transports.live_config import LiveConfig, SourceRequest
from streameval.transports.profiles import load_profile
from streameval.transports.websocket.transport import WebSocketSource

W, H = 640, 432
PROFILE = """
name = "bench"
transport = "ws"
fps = 16
[keys]
semantics = "hold"
[templates.keydown]
type = "keydown"
key = "{key}"
"""


def _jpeg() -> bytes:
    rng = np.random.default_rng(0)
    image = cv2.GaussianBlur(rng.integers(0, 255, (H, W, 3), dtype=np.uint8), (0, 0), 2)
    return bytes(cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])[1])


async def _server(frame: bytes) -> tuple[web.AppRunner, int]:
    async def socket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=1024**2)
        await ws.prepare(request)
        async for msg in ws:
            if msg.type == WSMsgType.TEXT:
                await ws.send_bytes(frame)
        return ws

    return await serve_websocket(socket)


async def _bare(port: int, n: int) -> list[float]:
    import aiohttp

    out = []
    async with aiohttp.ClientSession() as session:
        ws = await session.ws_connect(f"ws://127.0.0.1:{port}/ws", max_msg_size=16 * 1024**2)
        for _ in range(n):
            t = time.perf_counter()
            await ws.send_str(json.dumps({"type": "keydown", "key": "w"}))
            msg = await ws.receive()
            bgr = cv2.imdecode(np.frombuffer(msg.data, np.uint8), cv2.IMREAD_COLOR)
            cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
            out.append(time.perf_counter() - t)
        await ws.close()
    return out[3:]


async def _ours(port: int, n: int, profile_path: str) -> list[float]:
    profile = load_profile(profile_path)
    request = SourceRequest(
        f"ws://127.0.0.1:{port}/ws", ("W",), "bench", "bench", LiveConfig(seconds_per_key=3600.0)
    )
    source = WebSocketSource(request, profile=profile, key_names=profile.key_names())
    await source.connect()
    out = []
    try:
        while not isinstance(await source.recv(), FrameEvent):  # the driver's first keydown
            pass
        assert source.channel is not None
        for _ in range(n):
            t = time.perf_counter()
            await source.channel.key("keydown", "W")
            while not isinstance(await source.recv(), FrameEvent):
                pass
            out.append(time.perf_counter() - t)
    finally:
        await source.close()
    return out[3:]


async def ws_latency(frames: int, blocks: int = 4) -> tuple[list[float], list[float]]:
    """(streameval, bare aiohttp) key-to-frame round trips, in alternating blocks."""
    runner, port = await _server(_jpeg())
    ours: list[float] = []
    bare: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.toml"
        path.write_text(PROFILE)
        try:
            for _ in range(blocks):
                bare += await _bare(port, frames // blocks)
                ours += await _ours(port, frames // blocks, str(path))
        finally:
            await runner.cleanup()
    return ours, bare

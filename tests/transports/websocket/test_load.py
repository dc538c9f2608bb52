"""Load over WebSocket: one evaluator, 4 concurrent sessions at 16 fps 640×432 JPEG with a
``chunk_done`` every 9 frames (WorldFoundry's shape). Every session keeps up: delivered fps
near 16 and the transport's queue of undelivered frames bounded (no backlog)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from aiohttp import web

from bench.ws_transport import _jpeg
from streameval.core.events import EndOfStream, EpisodeEnd, FrameEvent
from streameval.transports.native_gate import DECIDE_AFTER
from streameval.transports.urls import AttachOptions, open_network_source
from streameval.transports.websocket.transport import WebSocketSource

pytestmark = pytest.mark.long  # `make test-long`

SESSIONS = 4
SECONDS = 6.0
FPS = 16.0


async def _server() -> tuple[web.AppRunner, int]:
    frame = _jpeg()

    async def socket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.receive()  # configure
        await ws.send_str(json.dumps({"type": "ready", "fps": FPS}))
        await ws.receive()  # the first keydown
        t0, n = time.monotonic(), 0
        while not ws.closed:
            await asyncio.sleep(max(0.0, t0 + n / FPS - time.monotonic()))
            await ws.send_bytes(frame)
            n += 1
            if n % 9 == 0:
                await ws.send_str(json.dumps({"type": "chunk_done", "frames": 9}))
        return ws

    app = web.Application()
    app.router.add_get("/ws", socket)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


async def _drain(source: WebSocketSource) -> dict[str, float]:
    await source.connect()
    frames, t0, t_last = 0, None, 0.0
    try:
        while True:
            event = await source.recv()
            if isinstance(event, FrameEvent):
                frames += 1
                # arrival times: the episode's first frames wait together for the native
                # rate (transports/native_gate.py), then come out at once
                assert event.t_wall is not None
                t0 = t0 or event.t_wall
                t_last = event.t_wall
            elif isinstance(event, EpisodeEnd):
                assert event.complete, event.reason
    except EndOfStream:
        pass
    await source.close()
    fps = (frames - 1) / (t_last - t0) if t0 and frames > 1 else 0.0
    return {"frames": frames, "fps": fps, "max_pending": source.max_pending_seen,
            "chunks": len(source.chunks.chunks)}  # fmt: skip


def test_four_websocket_sessions_at_16_fps() -> None:
    async def run() -> list[dict[str, float]]:
        runner, port = await _server()
        try:
            sources = [
                open_network_source(
                    f"ws://127.0.0.1:{port}/ws",
                    ("W",),
                    episode=f"s{i}",
                    suite="test",
                    options=AttachOptions(
                        clock=None, seconds_per_key=SECONDS, profile="worldfoundry"
                    ),
                )
                for i in range(SESSIONS)
            ]
            return await asyncio.gather(*(_drain(s) for s in sources))  # type: ignore[arg-type]
        finally:
            await runner.cleanup()

    results = asyncio.run(run())
    print(results)
    for r in results:
        assert r["fps"] > 14.5, results
        assert r["frames"] >= 0.9 * SECONDS * FPS, results
        # a few frames, never a growing queue (beyond the first frames held for the rate)
        assert r["max_pending"] <= DECIDE_AFTER + 8, results
        assert r["chunks"] >= SECONDS * FPS / 9 - 2, results

"""A test server on its own event loop in a thread, so the command line under test can run
its own ``asyncio.run`` (as ``streameval probe`` does) against it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

from aiohttp import web

from tests.probe.probe_servers import start

WS = "ws://127.0.0.1:{port}/api/realtime/ws"
WEBRTC = "webrtc+http://127.0.0.1:{port}/offer/game/1"


@contextmanager
def served(
    app: web.Application | Callable[[], Awaitable[tuple[web.AppRunner, int]]], url: str = WS
) -> Iterator[str]:
    """The server's URL (``url`` with its port) while the block runs; ``app`` is an aiohttp
    app, or a coroutine function that starts one and returns its runner and port."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    starting = start(app) if isinstance(app, web.Application) else app()
    runner, port = asyncio.run_coroutine_threadsafe(starting, loop).result(timeout=10)
    try:
        yield url.format(port=port)
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()

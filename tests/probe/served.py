"""A test server on its own event loop in a thread, so the command line under test can run
its own ``asyncio.run`` (as ``streameval probe`` does) against it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from aiohttp import web

from tests.probe.probe_servers import start

PATH = "/api/realtime/ws"


@contextmanager
def served(app: web.Application) -> Iterator[str]:
    """The app's WebSocket URL while the block runs."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    runner, port = asyncio.run_coroutine_threadsafe(start(app), loop).result(timeout=10)
    try:
        yield f"ws://127.0.0.1:{port}{PATH}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()

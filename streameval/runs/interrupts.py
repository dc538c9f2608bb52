"""SIGTERM ends a run the way Ctrl-C does: the episode in progress is finalized as incomplete.

``asyncio.run`` already turns SIGINT into a cancellation of the main task (and then raises
``KeyboardInterrupt``); SIGTERM's default is to die on the spot, which left no scores.json.
Here SIGTERM cancels the main task too, so ``run_episode`` writes the incomplete episode.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def cancel_on_sigterm(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work``; SIGTERM cancels it (``CancelledError`` reaches ``asyncio.run``'s caller)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    installed = False
    if task is not None:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
            installed = True
    try:
        return await work
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGTERM)

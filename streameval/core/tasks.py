"""Stopping asyncio tasks without being held by them.

``task.cancel()`` followed by ``with suppress(BaseException): await task`` has two faults:
it swallows the *caller's* own cancellation (awaiting a task forwards a cancel to it, and the
suppress then eats the CancelledError), and a task that ignores its cancel holds the caller
forever. Python 3.11's ``asyncio.wait_for`` ignores one when it is cancelled in the event-loop
turn its inner future completes, so a loop that waits with it can survive ``cancel()``: a
press repeater did, and the keyup that stopped it waited for good (a 300 s CI timeout).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

STOP_WAIT_S = 10.0
"""How long ``cancel_and_wait`` waits by default for cancelled tasks to end."""


async def cancel_and_wait(
    tasks: Iterable[asyncio.Task[object] | asyncio.Task[None] | None],
    timeout: float | None = STOP_WAIT_S,
) -> set[asyncio.Task[object] | asyncio.Task[None]]:
    """Cancel ``tasks`` and wait up to ``timeout`` s for them to end; return those still
    running (they ignored their cancel). Their exceptions are retrieved, not raised: a task
    being stopped has nothing left to report; the caller's own cancel still propagates."""
    alive = {t for t in tasks if t is not None and not t.done()}
    for task in alive:
        task.cancel()
    if alive:
        await asyncio.wait(alive, timeout=timeout)
    for task in alive:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: no "exception was never retrieved" at exit
    return {t for t in alive if not t.done()}

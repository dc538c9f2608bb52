"""A hang in a transport test says where every task stands before it is cancelled."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

EPISODE_LIMIT_S = 90.0
"""Far over any test episode here (≤ 10 s of keys): more is a hang."""


async def watchdog(main: asyncio.Task[Any] | None, limit_s: float = EPISODE_LIMIT_S) -> None:
    """After ``limit_s``: print every task's stack (cancelling moves them), then cancel
    ``main``. Start it beside the episode and cancel it when the episode ends."""
    await asyncio.sleep(limit_s)
    for task in asyncio.all_tasks():
        task.print_stack(file=sys.stdout)
    if main is not None:
        main.cancel()

"""SIGTERM ends a run the way Ctrl-C does: the episode in progress is finalized as incomplete.

``asyncio.run`` already turns SIGINT into a cancellation of the main task (and then raises
``KeyboardInterrupt``); SIGTERM's default is to die on the spot, which left no scores.json.
Here SIGTERM cancels the run's task too, so ``run_episode`` writes the incomplete episode and
its results.jsonl line — on the command line and in ``streameval.aevaluate`` alike
(``runs.run``). A presentation that stops a run its own way (the dashboard's ``q``) takes
the signal over while it runs (``SigtermCancels.redirect``).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable
from types import TracebackType
from typing import Any


class SigtermCancels:
    """While entered (on the event loop's thread): SIGTERM cancels the task that entered,
    or calls what ``redirect`` gave instead. On exit the loop's handler is removed and the
    process's former SIGTERM handler put back. Outside the main thread (a helper thread's
    loop) signals cannot be caught: then it does nothing."""

    def __init__(self) -> None:
        self.installed = False
        self._task: asyncio.Task[Any] | None = None
        self._instead: Callable[[], None] | None = None
        self._former: Any = None

    def redirect(self, action: Callable[[], None] | None) -> None:
        """SIGTERM calls ``action`` from now on (None: cancel the task again)."""
        self._instead = action

    def _on_sigterm(self) -> None:
        if self._instead is not None:
            self._instead()
        elif self._task is not None:
            self._task.cancel()

    def __enter__(self) -> SigtermCancels:
        loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        if self._task is None:
            return self
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            self._former = signal.getsignal(signal.SIGTERM)
            loop.add_signal_handler(signal.SIGTERM, self._on_sigterm)
            self.installed = True
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if not self.installed:
            return
        self.installed = False
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)
            if self._former is not None:  # None: set outside Python, nothing to restore
                signal.signal(signal.SIGTERM, self._former)

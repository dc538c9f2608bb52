"""Calls into an in-process model that always come back: a timeout, and no dead process.

``asyncio.to_thread`` cannot abandon a call: a ``step()`` that never returns keeps an executor
thread, and ``asyncio.run`` then waits for it at exit (the CLI hung, and ignored Ctrl-C). Here
each source owns one daemon thread; a call that outlives its timeout is abandoned (the thread
is left to the interpreter's exit) and reported, and the awaiting coroutine can always be
cancelled. A model that raises ``SystemExit`` or ``KeyboardInterrupt`` from its own code gets
an ordinary exception: it ends that episode, never the evaluator.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any

from streameval.errors import ModelCallTimeoutError, ModelRaisedError

# Seconds one model call may take by default: generous for a big model on a slow GPU.
DEFAULT_STEP_TIMEOUT_S = 300.0


_Job = tuple[Callable[..., Any], tuple[Any, ...], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # timed out or cancelled meanwhile
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


class ModelThread:
    """One daemon thread that runs a model's calls in order."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=f"model:{name}", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, args, loop, future = job
            error: BaseException | None = None
            result: Any = None
            try:
                result = fn(*args)
            except Exception as exc:
                error = exc
            except BaseException as exc:
                error = ModelRaisedError(f"{type(exc).__name__}({exc})")
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:  # the loop is gone: nobody waits any more
                return

    async def call(self, timeout: float, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in the model thread; ``ModelCallTimeoutError`` after ``timeout`` s."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._jobs.put((fn, args, loop, future))
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise ModelCallTimeoutError(f"no answer after {timeout:g} s") from None

    def close(self) -> None:
        """Let the thread end after its current call (a hung call keeps it; it is a daemon)."""
        self._jobs.put(None)


class ModelHealth:
    """Shared by the episodes of one model: once a call hung, the model is not driven again
    (its thread may still be inside the model; a second caller would race it)."""

    def __init__(self) -> None:
        self.hung: str | None = None

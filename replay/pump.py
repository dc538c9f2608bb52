"""Run a blocking producer (video decode) in a thread, hand its items to asyncio, bounded.

Decoding must neither block the event loop nor run ahead without limit. The producer thread
takes a slot of a semaphore before producing each item (so at most ``capacity`` items wait),
posts it to the loop with ``call_soon_threadsafe``, and the consumer frees the slot when it takes
the item. PyAV releases the GIL while it decodes, so decode overlaps with the consumer's work
on another core. No polling: ``close`` wakes a producer waiting for a slot.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_CAPACITY = 8


class _End:
    """The producer finished normally."""


class _Failed:
    """The producer raised; the consumer re-raises ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class ThreadPump(Generic[T]):
    """``await pump.get()`` yields the producer's items in order; ``StopAsyncIteration`` at the end.

    The producer is created and iterated in the pump's thread (so whatever it opens, such as a
    container, is used and closed by one thread only).
    """

    def __init__(
        self,
        make: Callable[[], Iterator[T]],
        *,
        capacity: int = DEFAULT_CAPACITY,
        name: str = "replay-pump",
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self._make = make
        self._slots = threading.Semaphore(capacity)
        self._stop = threading.Event()
        self._queue: asyncio.Queue[T | _End | _Failed] = asyncio.Queue()
        self._thread: threading.Thread | None = None
        self._name = name
        self._finished = False

    def _post(self, loop: asyncio.AbstractEventLoop, item: T | _End | _Failed) -> bool:
        try:
            loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            return False
        return True

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        iterator: Iterator[T] | None = None
        try:
            iterator = self._make()
            while True:
                self._slots.acquire()
                if self._stop.is_set():
                    return
                try:
                    item = next(iterator)
                except StopIteration:
                    self._post(loop, _End())
                    return
                if not self._post(loop, item):
                    return
        except BaseException as exc:  # handed to the consumer, who decides what it means
            self._post(loop, _Failed(exc))
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()

    def start(self) -> None:
        """Start producing now (call from the event loop); ``get`` starts it otherwise."""
        if self._thread is None and not self._finished:
            self._thread = threading.Thread(
                target=self._run, args=(asyncio.get_running_loop(),), name=self._name, daemon=True
            )
            self._thread.start()

    async def get(self) -> T:
        """The next item; re-raises the producer's exception; ``StopAsyncIteration`` when done."""
        if self._finished:
            raise StopAsyncIteration
        self.start()
        item = await self._queue.get()
        self._slots.release()
        if isinstance(item, _End):
            self._finished = True
            raise StopAsyncIteration
        if isinstance(item, _Failed):
            self._finished = True
            raise item.error
        return item

    async def close(self) -> None:
        """Stop the producer and wait for its thread (it finishes the item in hand, then exits)."""
        self._finished = True
        self._stop.set()
        self._slots.release()  # wake a producer that waits for a slot
        thread = self._thread
        if thread is not None and thread.is_alive():
            await asyncio.to_thread(thread.join)

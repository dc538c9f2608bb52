"""The perception thread: frames in through a bounded queue, results out to the event loop.

Why a dedicated thread instead of ``asyncio.to_thread`` per frame: with one round trip through
the event loop per frame, the perceiver idled while the loop (sharing the other core with the
decoder) got round to dispatching the next frame — 165 frames/s against 270 for the
perceiver alone (bench/throughput.py). Here the thread takes the next frame as soon as it is
done with the last; the loop only applies results. Events keep their order: control events
travel through the same queue and come out where they went in.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from streameval.core.events import EpisodeStart, Event, FrameEvent
from streameval.perception.perceiver import FrameRejectedError, Perceiver, PerceptionOutput


@dataclass(frozen=True, slots=True)
class Perceived:
    """One event after the perception thread: a frame carries its output (or rejection)."""

    event: Event
    output: PerceptionOutput | None = None
    rejected: str | None = None
    seconds: float = 0.0


class PerceptionWorker:
    """Runs ``make_perceiver`` (on EpisodeStart) and then ``Perceiver.process`` for each frame
    in its own thread. The perceiver and its backends live only in that thread."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        make_perceiver: Callable[[EpisodeStart], Perceiver],
        capacity: int,
    ) -> None:
        self._loop = loop
        self._make = make_perceiver
        self._inbox: queue.Queue[Event | None] = queue.Queue(maxsize=max(1, capacity))
        self.results: asyncio.Queue[Perceived | None] = asyncio.Queue()
        self._space = asyncio.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="perception", daemon=True)
        self._thread.start()

    def qsize(self) -> int:
        return self._inbox.qsize()

    def full(self) -> bool:
        return self._inbox.full()

    async def put(self, event: Event | None) -> None:
        """Hand an event to the thread, waiting (without blocking the loop) while it is full."""
        while self._inbox.full():
            self._space.clear()
            await self._space.wait()
        self._inbox.put_nowait(event)

    def stop(self) -> None:
        """Cancel: the thread stops after the frame in hand; queued frames are dropped."""
        self._stop.set()
        while True:
            try:
                self._inbox.get_nowait()
            except queue.Empty:
                break
        with contextlib.suppress(queue.Full):
            self._inbox.put_nowait(None)

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _post(self, item: Perceived | None) -> None:
        try:
            self._loop.call_soon_threadsafe(self.results.put_nowait, item)
            self._loop.call_soon_threadsafe(self._space.set)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            self._stop.set()

    def _run(self) -> None:
        perceiver: Perceiver | None = None
        while not self._stop.is_set():
            event = self._inbox.get()
            if event is None:
                break
            if isinstance(event, EpisodeStart):
                perceiver = self._make(event)
                self._post(Perceived(event))
            elif isinstance(event, FrameEvent) and perceiver is not None:
                t0 = time.perf_counter()
                try:
                    out = perceiver.process(event)
                except FrameRejectedError as exc:
                    self._post(Perceived(event, rejected=str(exc)))
                    continue
                except Exception as exc:  # a backend failing on one frame: an error, a gap
                    self._post(
                        Perceived(
                            event, rejected=f"frame {event.index}: perception failed: {exc!r}"
                        )
                    )
                    continue
                self._post(Perceived(event, out, seconds=time.perf_counter() - t0))
            else:
                self._post(Perceived(event))
        self._post(None)

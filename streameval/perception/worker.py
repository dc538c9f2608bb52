"""The perception thread: frames in through a bounded queue, results out to the event loop.

Why a dedicated thread instead of ``asyncio.to_thread`` per frame: with one round trip through
the event loop per frame, the perceiver idled while the loop (sharing the other core with the
decoder) got round to dispatching the next frame — 165 frames/s against 270 for the
perceiver alone (bench/throughput.py). Here the thread takes the next frame as soon as it is
done with the last; the loop only applies results. Events keep their order: control events
travel through the same queue and come out where they went in.

Each frame is perceived in two halves on two threads (``Perceiver.flow_step``, then
``Perceiver.finish``): the flow thread computes the next pair's flow while the finishing thread
turns the last flow into signals (two passes over a 2 MB field), memory and imaging rows, and
posts the result. The flow — the one cost that grows with the frame — is then all the flow
thread does besides the analysis frame: 0.3–0.6 ms a frame of other work moved off it, onto the
core the decoder and the event loop share (which had room). A bounded handoff between them keeps
at most ``HANDOFF`` flows in memory; results still come out in the order the events went in.

The queues between the loop and the threads are ``queue.SimpleQueue`` (C, one lock operation a
call), bounded by counting (the inbox: the loop puts only while ``full()`` is False) or by
slot tokens (the handoff): ``queue.Queue``'s Python-level conditions took 4–5 % of the flow
thread's samples (py-spy, bench/throughput.py), each of their lock handoffs a moment the
flow thread waits for the GIL (docs/benchmarks.md#per-frame-path).
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from streameval.core.events import EpisodeStart, Event, FrameEvent
from streameval.errors import FrameRejectedError
from streameval.perception.perceiver import FlowStep, Perceiver, PerceptionOutput

# frames between the flow thread and the finishing thread: room for a depth-free fit frame's
# extra flows (one or two, on the finishing thread) without holding the flow thread up
HANDOFF = 4


@dataclass(frozen=True, slots=True)
class _Handoff:
    """An event on its way from the flow thread to the finishing thread."""

    event: Event
    perceiver: Perceiver | None = None
    step: FlowStep | None = None  # a frame whose second half is still to run
    rejected: str | None = None
    seconds: float = 0.0  # of the first half


@dataclass(frozen=True, slots=True)
class Perceived:
    """One event after the perception thread: a frame carries its output (or rejection)."""

    event: Event
    output: PerceptionOutput | None = None
    rejected: str | None = None
    seconds: float = 0.0


class PerceptionWorker:
    """Runs ``make_perceiver`` (on EpisodeStart) and then each frame's two halves,
    ``Perceiver.flow_step`` and ``Perceiver.finish``, on two threads of its own (module
    docstring). The perceiver and its backends live only in those threads."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        make_perceiver: Callable[[EpisodeStart], Perceiver],
        capacity: int,
    ) -> None:
        self._loop = loop
        self._make = make_perceiver
        self._capacity = max(1, capacity)
        self._inbox: queue.SimpleQueue[Event | None] = queue.SimpleQueue()
        self._handoff: queue.SimpleQueue[_Handoff | None] = queue.SimpleQueue()
        # one token per flow allowed between the threads: the flow thread takes one before it
        # hands a frame on, the finisher gives it back when it takes the frame
        self._handoff_slots: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(HANDOFF):
            self._handoff_slots.put(None)
        self.results: asyncio.Queue[Perceived | None] = asyncio.Queue()
        self._space = asyncio.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="perception", daemon=True)
        self._finisher = threading.Thread(
            target=self._finish, name="perception-finish", daemon=True
        )
        self._thread.start()
        self._finisher.start()

    def qsize(self) -> int:
        return self._inbox.qsize()

    def full(self) -> bool:
        return self._inbox.qsize() >= self._capacity

    async def put(self, event: Event | None) -> None:
        """Hand an event to the thread, waiting (without blocking the loop) while it is full."""
        while self.full():
            self._space.clear()
            await self._space.wait()
        self._inbox.put_nowait(event)

    def stop(self) -> None:
        """Cancel: the threads stop after the frame in hand; queued frames are dropped."""
        self._stop.set()
        while True:
            try:
                self._inbox.get_nowait()
            except queue.Empty:
                break
        self._inbox.put_nowait(None)

    def running(self) -> bool:
        """Whether either thread is still alive (after ``join``: it timed out)."""
        return self._thread.is_alive() or self._finisher.is_alive()

    def join(self, timeout: float | None = None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        self._thread.join(timeout)
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        self._finisher.join(left)

    def _deliver(self, item: Perceived | None) -> None:
        """On the loop: one result in, and a slot of the inbox has been freed."""
        self.results.put_nowait(item)
        self._space.set()

    def _post(self, item: Perceived | None) -> None:
        try:  # one wake-up of the loop per result
            self._loop.call_soon_threadsafe(self._deliver, item)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            self._stop.set()

    def _run(self) -> None:
        """The flow thread: events in order; a frame's first half."""
        perceiver: Perceiver | None = None
        slot, handoff = self._handoff_slots.get, self._handoff.put

        def hand(item: _Handoff | None) -> None:
            slot()
            handoff(item)

        try:
            while not self._stop.is_set():
                event = self._inbox.get()
                if event is None:
                    break
                if isinstance(event, EpisodeStart):
                    perceiver = self._make(event)
                    hand(_Handoff(event))
                elif isinstance(event, FrameEvent) and perceiver is not None:
                    t0 = time.perf_counter()
                    try:
                        step = perceiver.flow_step(event)
                    except FrameRejectedError as exc:
                        hand(_Handoff(event, rejected=str(exc)))
                        continue
                    except Exception as exc:  # a backend failing on one frame: an error, a gap
                        hand(_Handoff(event, rejected=_failed(event, exc)))
                        continue
                    hand(_Handoff(event, perceiver, step, seconds=time.perf_counter() - t0))
                else:
                    hand(_Handoff(event))
        finally:
            hand(None)  # the finisher takes every item until this one: never blocks for good

    def _finish(self) -> None:
        """The finishing thread: a frame's second half, then every result posted in order."""
        while True:
            item = self._handoff.get()
            self._handoff_slots.put(None)
            if item is None:
                break
            if self._stop.is_set():
                continue  # cancelled: what is still in hand is dropped
            event = item.event
            if item.step is not None and item.perceiver is not None:
                t0 = time.perf_counter()
                try:
                    out = item.perceiver.finish(item.step)
                except Exception as exc:
                    self._post(Perceived(event, rejected=_failed(event, exc)))
                    continue
                seconds = item.seconds + time.perf_counter() - t0
                self._post(Perceived(event, out, seconds=seconds))
            elif item.rejected is not None:
                self._post(Perceived(event, rejected=item.rejected))
            else:
                self._post(Perceived(event))
        self._post(None)


def _failed(event: Event, exc: Exception) -> str:
    index = event.index if isinstance(event, FrameEvent) else "?"
    return f"frame {index}: perception failed: {exc!r}"

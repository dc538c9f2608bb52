"""The reader task of an episode's pipeline (``engine/pipeline.py``): events from the source
into the perception thread's bounded queue, and what only the reader can count (arrivals,
drops of a live source whose perception fell behind, chunks and keys sent)."""

from __future__ import annotations

import time

from streameval.core.events import (
    ChunkDone,
    EndOfStream,
    EpisodeEnd,
    EpisodeStart,
    ErrorEvent,
    FrameEvent,
    KeySent,
)
from streameval.core.observers import EpisodeObserver
from streameval.core.source import Source
from streameval.engine.episode_stats import EpisodeStats
from streameval.engine.perception_plan import recorded_plan
from streameval.perception.worker import PerceptionWorker


async def read_source(
    source: Source,
    worker: PerceptionWorker,
    observers: list[EpisodeObserver],
    stats: EpisodeStats,
) -> None:
    """Pull events from the source into the perception queue; observers see every frame
    received, dropped or not."""
    while True:
        try:
            event = await source.recv()
        except EndOfStream:
            break
        except Exception as exc:  # a broken source ends its episode, never the process
            message = f"{source!r}: source failed: {exc}"
            await worker.put(ErrorEvent(message, fatal=True, source="source"))
            await worker.put(EpisodeEnd(frames=stats.received, complete=False, reason=message))
            break
        if isinstance(event, EpisodeStart):
            # here, not when perception has caught up: observers (the recorder) must hear of
            # the episode before its first frame
            for o in observers:
                o.on_start(event.info)
            stats.info = event.info
            recorded = recorded_plan(event.info.extra)
            stats.drop = recorded.dropped if recorded is not None else frozenset()
        elif isinstance(event, FrameEvent):
            stats.received += 1
            # the frame's arrival, not this read: frames wait for admission (a chunk's burst,
            # the native gate deciding the rate) and a span of reads is shorter than the
            # span of arrivals (WorldFoundry Studio's own server read 1.1x real time, paced
            # at 17 fps; its arrivals span 0.99x)
            now = event.t_wall if event.t_wall is not None else time.perf_counter()
            stats.t_first = stats.t_first if stats.t_first is not None else now
            stats.t_last = now
            if event.t_wall is not None:
                stats.arrivals[event.index] = event.t_wall
            sent = stats.key_times.pop(event.index, None)
            if sent is not None and event.t_wall is not None:
                stats.step_latencies.append(event.t_wall - sent)
            for o in observers:
                o.on_frame(event)
            if (source.droppable and worker.full()) or event.index in stats.drop:
                stats.dropped += 1
                stats.dropped_frames.append(event.index)
                stats.dropped_keys[event.index] = event.key
                continue
        elif isinstance(event, ChunkDone):
            stats.chunks.append(event)
            for o in observers:
                o.on_chunk(event)
            continue
        elif isinstance(event, KeySent):
            stats.key_times[event.frame] = event.t_wall
            if not stats.key_changes or stats.key_changes[-1][1] != event.key:
                stats.key_changes.append((event.t_wall, event.key))
            for o in observers:
                o.on_key(event)
            continue
        await worker.put(event)
        if isinstance(event, EpisodeEnd):
            break
    # Not in a ``finally``: when cancelled, the worker is stopped instead, and a full queue
    # would block this put forever.
    await worker.put(None)

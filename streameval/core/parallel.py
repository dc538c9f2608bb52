"""A small thread pool for independent OpenCV/numpy calls at episode end and in scoring.

OpenCV and numpy release the GIL inside their kernels, so a handful of Python threads runs
independent calls (one SIFT detection per frame, one Gram statistic per frame) side by side
while OpenCV's own pool stays at the pipeline's one thread (``PipelineConfig.opencv_threads``;
its workers spin while they wait). Every call is independent and single-threaded inside, and
results come back in input order, so the answer is bit for bit the serial one: only the wall
time changes, not the CPU time.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

MAX_WORKERS = 4
"""At most this many threads: the work items are tens of milliseconds each and ≤ 48 of them,
so more threads than this only add start-up and contention on a shared machine."""


def available_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def thread_map(
    fn: Callable[[T], R], items: Sequence[T], *, max_workers: int | None = None
) -> list[R]:
    """``[fn(x) for x in items]``, run on up to ``max_workers`` threads (default: the cores,
    at most ``MAX_WORKERS``); serial for one item or one worker. If calls fail, the exception of
    the first failing item in input order is raised, as the serial loop would raise it."""
    workers = min(MAX_WORKERS, available_cores()) if max_workers is None else int(max_workers)
    workers = max(1, min(workers, len(items)))
    if workers == 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(workers, thread_name_prefix="streameval-map") as pool:
        return list(pool.map(fn, items))


__all__ = ["MAX_WORKERS", "available_cores", "thread_map"]

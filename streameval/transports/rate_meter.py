"""The rate of a server that says none, measured before its session starts
(docs/serve-formats.md#frame-rate, step 4).

When neither ``--fps``, the server's ``ready`` nor the profile gives a stream's rate, the
frames it sends before the first key are timed: a stream's first frames come in a burst or
late while its decoder and jitter buffer settle, so the first ``SETTLE_S`` are skipped and
the next ``WINDOW_S`` counted. A server silent at rest sends too few (fewer than
``MIN_FRAMES``): then nothing is measured and the default stays (``delivered_fps`` in
``scores.json`` still says what came).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

SETTLE_S = 0.5
"""A stream's first frames, not measured: they come in a burst or late while it settles."""
WINDOW_S = 1.5
"""How long the rate is measured after that."""
MIN_FRAMES = 6
"""Fewer frames in the window and the server is taken as silent at rest (not measured)."""


class RateMeter:
    """Arrival times of the frames a source receives before its episode starts."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []

    def add(self, t_arrival: float) -> None:
        self.arrivals.append(t_arrival)

    async def measure(self, stopped: Callable[[], bool]) -> float | None:
        """The rate in frames a second, rounded to 0.5 (module docstring), or None; waits
        ``SETTLE_S + WINDOW_S`` unless ``stopped()`` says the session ended meanwhile."""
        deadline = time.perf_counter() + SETTLE_S + WINDOW_S
        while time.perf_counter() < deadline:
            if stopped():
                return None
            await asyncio.sleep(0.05)
        return rate_of(self.arrivals)


def rate_of(arrivals: list[float]) -> float | None:
    """Frames a second over ``arrivals`` after their first ``SETTLE_S``, to 0.5 fps; None
    with fewer than ``MIN_FRAMES`` there."""
    if not arrivals:
        return None
    settled = [t for t in arrivals if t >= arrivals[0] + SETTLE_S]
    span = settled[-1] - settled[0] if len(settled) >= MIN_FRAMES else 0.0
    if span <= 0:
        return None
    return max(0.5, round(2.0 * (len(settled) - 1) / span) / 2.0)

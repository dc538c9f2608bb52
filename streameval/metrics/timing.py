"""Wall-time primitives shared by the interactivity block and WorldAtlas's real-time metrics.

Both describe one served session from frame arrival times and the flow signals, and each asks
two questions of them, answered here once as pure numpy kernels:

- frames per second over the wall span of the arrivals (``wall_rate``): the interactivity
  block's delivered fps (``metrics/interactivity.py``) and WorldAtlas's effective generation fps
  and realtime factor (``metrics/worldatlas/realtime.py``);
- key → response: the first flow sample, seen after a key was sent and inside a window, that
  moves the commanded way past a bar (``key_response``). The callers differ in the bar and
  the window, and pass them: the interactivity block half the episode's reference speed,
  until the next key (exclusive); WorldAtlas an adaptive bar over a 4-sample baseline, from the
  change frame until the next change or its timeout (inclusive).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from streameval.constants import FLOW_STRIDE
from streameval.core.arrays import F64
from streameval.metrics.control.segment import reference_speed


@dataclass(frozen=True, slots=True)
class WallRate:
    """Frames with a finite arrival time, the wall seconds from the first to the last of them,
    and the frame intervals per wall second over that span (None: fewer than two frames, or
    no span to divide by)."""

    frames: int
    wall_s: float
    fps: float | None


def wall_rate(arrivals: npt.ArrayLike) -> WallRate:
    """Frames per second over the wall span of ``arrivals`` (seconds; NaN: no arrival time).

    ``frames − 1`` intervals span the earliest to the latest arrival, so a perfect 16 fps clock
    gives exactly 16. The span is latest minus earliest, not last minus first: the same for
    arrivals in frame order (every live session: a frame's time is taken when it is received),
    and still the wall span when a rollout's recorded times are not in order.
    """
    t = np.asarray(arrivals, dtype=np.float64)
    t = t[np.isfinite(t)]
    if t.size < 2:
        return WallRate(int(t.size), 0.0, None)
    frames, wall_s = int(t.size), float(t.max() - t.min())
    return WallRate(frames, wall_s, (frames - 1) / wall_s if wall_s > 0 else None)


def seen_times(arrivals: F64, samples: int) -> F64:
    """When each flow sample is seen: sample i (the flow from frame i to i + FLOW_STRIDE) once
    frame i + FLOW_STRIDE has arrived. At most ``samples`` of them, fewer when frames are
    missing at the end."""
    n = min(samples, max(0, arrivals.size - FLOW_STRIDE))
    return arrivals[FLOW_STRIDE : FLOW_STRIDE + n]


def reference_bar(channel: F64, share: float) -> float:
    """``share`` of the channel's reference speed (``reference_speed`` of its finite absolute
    values, the control columns' reference): the motion that counts as "moving" on this
    channel in this episode; inf for a channel without a finite sample (nothing answers)."""
    finite = np.abs(channel[np.isfinite(channel)])
    return share * reference_speed(finite) if finite.size else math.inf


@dataclass(frozen=True, slots=True)
class KeyResponse:
    """The flow sample that answered a key and the wall seconds from the key to its arrival."""

    sample: int
    latency_s: float


def key_response(
    signal: F64,
    arrivals: F64,
    t_key: float,
    t_end: float,
    bar: float,
    *,
    end_inclusive: bool,
    first_sample: int = 0,
) -> KeyResponse | None:
    """The first flow sample that answers a key sent at ``t_key``, or None.

    ``signal`` is the key's flow channel signed so that obeying is positive; a sample answers
    when it reaches ``bar``. Searched: samples from ``first_sample`` on, seen (``seen_times``)
    at or after ``t_key`` and before ``t_end`` (at ``t_end`` too with ``end_inclusive``). The
    latency is the answering sample's arrival time minus ``t_key``.
    """
    seen = seen_times(arrivals, signal.size)
    n = seen.size
    if n == 0:
        return None
    before_end = seen <= t_end if end_inclusive else seen < t_end
    window = (np.arange(n) >= first_sample) & np.isfinite(seen) & (seen >= t_key) & before_end
    hits = np.flatnonzero(window & (signal[:n] >= bar))
    if not hits.size:
        return None
    hit = int(hits[0])
    return KeyResponse(hit, float(seen[hit] - t_key))

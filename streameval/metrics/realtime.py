"""WorldAtlas's real-time axis as pure numpy kernels (docs/methods.md#real-time-metrics).

Four metrics on WorldAtlas's [0, 1] scale, beside the wall-time interactivity figures
(``metrics/interactivity.py``), which describe the same session in their own units:

- effective generation fps: frames over the wall span of their arrivals, against the nominal
  fps;
- realtime factor: seconds of video per second of wall time;
- action response latency: per action change, the wall time to the first frame whose flow
  along the action's axis clears WorldAtlas's threshold (the larger of a floor and the mean +
  2 std of the 4 samples before the change); an unanswered change counts as the timeout;
- latency budget pass rate: the share of changes answered within the budget.

Kernels take arrays and numbers and return numbers, so that their unit tests need no episode
and ``rescore`` reproduces them from the cache (``realtime_scores.py`` is the cache adapter).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streameval.constants import FLOW_STRIDE
from streameval.core.arrays import F64

BASELINE_SAMPLES = 4
"""Samples before a change whose mean and spread set the response threshold (WorldAtlas)."""
BASELINE_STDS = 2.0
RESPONSE_TIMEOUT_S = 1.0
"""A change unanswered this long counts as answered at this latency (WorldAtlas's timeout)."""
DEFAULT_LATENCY_BUDGET_S = 1.0


def clamp01(x: float) -> float:
    """WorldAtlas's normalisation: every real-time metric lies in [0, 1]."""
    return min(1.0, max(0.0, x))


def wall_span(arrivals: F64) -> tuple[int, float]:
    """Frames with an arrival time and the wall seconds from the first to the last."""
    t = arrivals[np.isfinite(arrivals)]
    if t.size < 2:
        return int(t.size), 0.0
    return int(t.size), float(t.max() - t.min())


def effective_fps(frames: int, wall_s: float) -> float | None:
    """Frame intervals per wall second (``frames − 1`` intervals span first to last arrival,
    the same count as the interactivity block's delivered fps); None without a span."""
    return (frames - 1) / wall_s if frames >= 2 and wall_s > 0 else None


def realtime_factor(frames: int, wall_s: float, fps: float) -> float | None:
    """Video seconds per wall second over the same span: 1 for a model that keeps pace."""
    rate = effective_fps(frames, wall_s)
    return rate / fps if rate is not None and fps > 0 else None


def response_threshold(baseline: F64, floor: float) -> float:
    """WorldAtlas's bar for "the world answered": ``max(floor, mean + 2 std)`` of the finite
    baseline samples (the floor alone without any: nothing moved before)."""
    b = baseline[np.isfinite(baseline)]
    if b.size == 0:
        return floor
    return max(floor, float(b.mean() + BASELINE_STDS * b.std()))


def change_frame(arrivals: F64, t_change: float) -> int:
    """The first frame that arrived at or after the change was sent (the first the new
    action can condition); ``len(arrivals)`` when none did. Frames without an arrival time
    are skipped."""
    after = np.flatnonzero(np.isfinite(arrivals) & (arrivals >= t_change))
    return int(after[0]) if after.size else int(arrivals.size)


def response_sample(
    signal: F64, arrivals: F64, t_change: float, t_end: float, floor: float
) -> int | None:
    """The first flow sample that answers a change sent at ``t_change``, or None.

    ``signal[i]`` is the flow from frame i to i + FLOW_STRIDE along the action's axis, signed
    so that obeying is positive; it is seen when frame i + FLOW_STRIDE arrives. Samples seen
    from the change frame on and before ``t_end`` (the next change, or the timeout) are
    searched; the threshold comes from the 4 samples before the first searched one."""
    n = min(signal.size, max(0, arrivals.size - FLOW_STRIDE))
    if n == 0:
        return None
    seen = arrivals[FLOW_STRIDE : FLOW_STRIDE + n]
    first = max(0, change_frame(arrivals, t_change) - FLOW_STRIDE)
    bar = response_threshold(signal[max(0, first - BASELINE_SAMPLES) : first], floor)
    idx = np.arange(n)
    window = (idx >= first) & np.isfinite(seen) & (seen >= t_change) & (seen <= t_end)
    hits = np.flatnonzero(window & (signal[:n] >= bar))
    return int(hits[0]) if hits.size else None


@dataclass(frozen=True, slots=True)
class Response:
    """One action change: its latency in wall seconds (the timeout when unanswered) and the
    frames from the change frame to the one that showed the answer (None: unanswered)."""

    latency_s: float
    frames: int | None

    @property
    def answered(self) -> bool:
        return self.frames is not None


def action_responses(
    signals: list[F64],
    arrivals: F64,
    change_times: F64,
    next_times: F64,
    floors: F64,
    timeout_s: float = RESPONSE_TIMEOUT_S,
) -> list[Response]:
    """Per change j (sent at ``change_times[j]``, ``signals[j]`` its action's signed axis,
    ``floors[j]`` its threshold floor): the response, searched until the next change
    (``next_times[j]``, inf for the last) or the timeout, whichever comes first."""
    out: list[Response] = []
    for j, t0 in enumerate(change_times.tolist()):
        end = min(float(next_times[j]), t0 + timeout_s)
        hit = response_sample(signals[j], arrivals, t0, end, float(floors[j]))
        if hit is None:
            out.append(Response(timeout_s, None))
            continue
        shown = hit + FLOW_STRIDE
        frames = shown - change_frame(arrivals, t0)
        out.append(Response(float(arrivals[shown] - t0), max(0, frames)))
    return out


def mean_latency(responses: list[Response]) -> float | None:
    """WorldAtlas's raw latency: the mean over changes, unanswered ones at the timeout."""
    return float(np.mean([r.latency_s for r in responses])) if responses else None


def latency_score(raw_s: float, budget_s: float) -> float:
    """Lower is better: 1 for an instant answer, 0 at or past the budget."""
    return clamp01(1.0 - raw_s / budget_s)


def budget_pass_rate(responses: list[Response], budget_s: float) -> float | None:
    """Share of changes answered within the budget (an unanswered change fails it)."""
    if not responses:
        return None
    passed = sum(1 for r in responses if r.answered and r.latency_s <= budget_s)
    return passed / len(responses)

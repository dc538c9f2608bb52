"""WorldAtlas's real-time axis as pure numpy kernels (docs/methods.md#real-time-metrics).

Four metrics on WorldAtlas's [0, 1] scale, beside the wall-time interactivity figures
(``metrics/interactivity.py``), which describe the same session in their own units and share
its two primitives (``metrics/timing.py``):

- effective generation fps: frames over the wall span of their arrivals (``wall_rate``),
  against the nominal fps;
- realtime factor: seconds of video per second of wall time;
- action response latency: per action change, the wall time to the first frame whose flow
  along the action's axis clears WorldAtlas's threshold (the larger of a floor and the mean +
  2 std of the 4 samples before the change; ``key_response``); an unanswered change counts as
  the timeout;
- latency budget pass rate: the share of changes answered within the budget.

Kernels take arrays and numbers and return numbers, so that their unit tests need no episode
and ``rescore`` reproduces them from the cache (``realtime_scores.py`` is the cache adapter).
WorldAtlas's constants are in ``constants.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streameval.constants import FLOW_STRIDE
from streameval.core.arrays import F64
from streameval.metrics.timing import KeyResponse, WallRate, key_response
from streameval.metrics.worldatlas.constants import (
    BASELINE_SAMPLES,
    BASELINE_STDS,
    RESPONSE_TIMEOUT_S,
    RESPONSE_WINDOW_CLOSED,
)


def clamp01(x: float) -> float:
    """WorldAtlas's normalisation: every real-time metric lies in [0, 1]."""
    return min(1.0, max(0.0, x))


def realtime_factor(rate: WallRate, fps: float) -> float | None:
    """Video seconds per wall second over the arrivals' wall span: 1 for a model that keeps
    pace."""
    return rate.fps / fps if rate.fps is not None and fps > 0 else None


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
) -> KeyResponse | None:
    """The first flow sample that answers a change sent at ``t_change``, or None.

    ``signal[i]`` is the flow from frame i to i + FLOW_STRIDE along the action's axis, signed
    so that obeying is positive; it is seen when frame i + FLOW_STRIDE arrives. Samples seen
    from the change frame on and until ``t_end`` (the next change, or the timeout; inclusive)
    are searched; the threshold comes from the 4 samples before the first searched one."""
    first = max(0, change_frame(arrivals, t_change) - FLOW_STRIDE)
    bar = response_threshold(signal[max(0, first - BASELINE_SAMPLES) : first], floor)
    return key_response(
        signal,
        arrivals,
        t_change,
        t_end,
        bar,
        end_inclusive=RESPONSE_WINDOW_CLOSED,
        first_sample=first,
    )


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
        frames = hit.sample + FLOW_STRIDE - change_frame(arrivals, t0)
        out.append(Response(hit.latency_s, max(0, frames)))
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

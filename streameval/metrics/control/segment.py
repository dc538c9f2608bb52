"""Control metrics of WorldMark (docs/methods.md#control-metrics) for one segment or one key switch:
Direction Accuracy, Direction Purity, Motion Stability and Response Latency as pure kernels over
numpy arrays. ``kernels.py`` scores a whole episode with them (and re-exports them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from streameval.constants import (
    DIR_EPS,
    LATENCY_MIN_SS_SAMPLES,
    LATENCY_REF_PCT,
    LATENCY_RESPONSE_GATE,
    LATENCY_SMOOTH_S,
    LATENCY_THRESHOLD,
    STABILITY_BASELINE_PCT,
    STABILITY_DECAY_CLIP,
    STABILITY_DECAY_KNEE,
    STABILITY_DECAY_WINDOW_S,
    STABILITY_G_MIN,
    STABILITY_HICCUP_SCALE,
    STABILITY_LOW,
    STABILITY_RECOVER,
    STABILITY_SMOOTH_S,
)
from streameval.core.arrays import F64
from streameval.metrics.control.smoothing import moving_average
from streameval.metrics.segments import check_fps
from streameval.protocol.keys import Family

# Not in constants.py (only the control kernels read them):
# docs/methods.md#direction-purity: fwd and unfitted lat/yaw segments split |Sx| half/half
PURITY_EVEN_SPLIT = 0.5
# docs/methods.md#motion-stability: a hiccup lasts >= 0.3 s, the smoothing window
HICCUP_MIN_S = STABILITY_SMOOTH_S

LatencyReason = Literal["no_response", "weak_response"]


@dataclass(frozen=True, slots=True)
class AccuracyScore:
    """``direction`` = mean(v) / (mean|channel| + 1e-9) in [-1, 1]; ``gated`` = direction·w."""

    direction: float
    weight: float
    gated: float


@dataclass(frozen=True, slots=True)
class PurityScore:
    """On-axis share of the motion: ``score = on_axis / (lateral + yaw + fwd + 1e-9)``."""

    score: float
    lateral: float
    yaw: float
    fwd: float


@dataclass(frozen=True, slots=True)
class StabilityScore:
    """``score = sustain·exp(−hr/0.5)·min(1, decay/0.7)``; parts are None when g ≤ 1e-6."""

    score: float
    g: float
    sustain: float | None
    hiccups: int | None
    hr: float | None
    decay: float | None


@dataclass(frozen=True, slots=True)
class LatencyScore:
    """``score = 1 − min(latency, L)/L``; ``latency_s`` is None when gated as no/weak response."""

    score: float
    latency_s: float | None
    reason: LatencyReason | None
    steady_state: float
    reached: bool


def _finite(x: ArrayLike, name: str) -> F64:
    """A fresh float64 1-D copy; kernels need at least one finite sample and no NaN."""
    a = np.array(x, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or inf; skip missing samples before scoring")
    return a


def _samples(seconds: float, fps: float) -> int:
    """Window length in samples as the reference computes it: ``max(1, int(seconds*fps))``."""
    return max(1, int(seconds * fps))


def direction_accuracy_segment(
    v: ArrayLike, channel_abs: ArrayLike, weight: float
) -> AccuracyScore:
    """Direction Accuracy of one segment (docs/methods.md#direction-accuracy): is the motion in the
    commanded direction?

    ``v`` = sign·channel and ``channel_abs`` = |channel| over the stable zone; ``weight`` is the
    motion-type gate (p_trans for lat, p_yaw for yaw, 1 for fwd or when no fit exists).
    """
    va = _finite(v, "v")
    ca = _finite(channel_abs, "channel_abs")
    direction = float(np.mean(va)) / (float(np.mean(ca)) + DIR_EPS)
    w = float(weight)
    return AccuracyScore(direction, w, direction * w)


def direction_purity_segment(
    sx_abs_mean: float, srad_abs_mean: float, family: Family, p_trans: float | None
) -> PurityScore:
    """Direction Purity of one segment (docs/methods.md#direction-purity): how much of the motion is
    on the commanded axis.

    |Sx| is split between lateral and yaw by the motion-type fit (``p_trans``, and
    ``p_yaw = 1 - p_trans``); fwd segments, and lat/yaw segments without a fit (``p_trans`` is
    None), split it half/half. |Srad| is the forward component.
    """
    sx = float(sx_abs_mean)
    fwd = float(srad_abs_mean)
    if family == "fwd" or p_trans is None:
        lateral = yaw = PURITY_EVEN_SPLIT * sx
    else:
        lateral = float(p_trans) * sx
        yaw = (1.0 - float(p_trans)) * sx
    on_axis = {"fwd": fwd, "lat": lateral, "yaw": yaw}[family]
    return PurityScore(on_axis / (lateral + yaw + fwd + DIR_EPS), lateral, yaw, fwd)


def count_hiccups(vs: F64, low: float, high: float, min_run: int) -> int:
    """Hysteresis count of dips, as the reference scans them (docs/methods.md#motion-stability,
    docs/methods.md#departures-from-the-reference).

    A dip starts at a sample below ``low`` with length 1; every later sample adds 1 to its
    length, *including the sample that recovers* (the first one above ``high``). On recovery the
    dip is a hiccup if its length is at least ``min_run``; a dip still open at the end counts
    under the same rule. So a dip one sample shorter than ``min_run`` that recovers counts.
    """
    hiccups = 0
    run = 0
    in_dip = False
    for x in vs.tolist():
        if in_dip:
            run += 1
            if x > high:
                hiccups += run >= min_run
                in_dip = False
        elif x < low:
            in_dip, run = True, 1
    if in_dip and run >= min_run:
        hiccups += 1
    return hiccups


def motion_stability_segment(v: ArrayLike, fps: float) -> StabilityScore:
    """Motion Stability of one segment (docs/methods.md#motion-stability): once responding, is the
    speed steady?

    ``v`` is the stable-zone response with missing samples already skipped; seconds for the
    hiccup rate are ``len(v) / fps``. The smoothed series has ``max(len(v), w)`` values (numpy's
    "same" convolution, as the reference): sustain, the hiccup scan and the decay term, which
    compares the means of the last and first ``int(3*fps)`` smoothed values, all run over it.
    """
    fps = check_fps(fps)
    va = _finite(v, "v")
    g = float(np.percentile(va, STABILITY_BASELINE_PCT))
    if g <= STABILITY_G_MIN:
        return StabilityScore(0.0, g, None, None, None, None)
    vs = moving_average(va, _samples(STABILITY_SMOOTH_S, fps))
    low = STABILITY_LOW * g
    sustain = float(np.mean(vs >= low))
    hiccups = count_hiccups(vs, low, STABILITY_RECOVER * g, _samples(HICCUP_MIN_S, fps))
    hr = hiccups / (va.size / fps)
    n3 = _samples(STABILITY_DECAY_WINDOW_S, fps)
    ratio = float(np.mean(vs[-n3:])) / (float(np.mean(vs[:n3])) + DIR_EPS)
    decay = min(max(ratio, 0.0), STABILITY_DECAY_CLIP)
    score = (
        sustain * math.exp(-hr / STABILITY_HICCUP_SCALE) * min(1.0, decay / STABILITY_DECAY_KNEE)
    )
    return StabilityScore(score, g, sustain, hiccups, hr, decay)


def reference_speed(channel_abs: ArrayLike) -> float:
    """``v_ref = P75(|channel|) + 1e-9`` over the whole episode, for one channel
    (docs/methods.md#response-latency).

    The channel is the new segment's key's (Srad for W/S, Sx for A/D/L/R), never pooled across
    channels: in WR, the R switch is judged against Sx alone, as the reference does.
    """
    return float(np.percentile(_finite(channel_abs, "channel_abs"), LATENCY_REF_PCT)) + DIR_EPS


def response_latency_switch(
    v_episode: ArrayLike,
    t_episode: ArrayLike,
    v_stable: ArrayLike,
    v_ref: float,
    t0: float,
    length_s: float,
    fps: float,
) -> LatencyScore:
    """Response Latency at one key switch (docs/methods.md#response-latency): how soon the new key
    takes effect.

    ``v_episode``/``t_episode`` are the new key's response (sign × its channel) and the sample
    times over the *whole episode*: the moving average runs over all of it, so its window reaches
    into the previous segment, as in the reference. ``v_stable`` is the response over the new
    segment's stable zone (for the steady state), ``v_ref`` from ``reference_speed``, ``t0`` the
    switch time and ``length_s`` the window L. The samples with ``t0 <= t <= t0 + L`` are scanned
    in order; the first whose smoothed value reaches ``0.5·v_ref`` gives the latency.
    """
    fps = check_fps(fps)
    if not (math.isfinite(length_s) and length_s > 0.0):
        raise ValueError(f"length_s must be > 0, got {length_s!r}")
    vall = _finite(v_episode, "v_episode")
    tall = _finite(t_episode, "t_episode")
    if tall.size != vall.size:
        raise ValueError(f"t_episode has {tall.size} samples, v_episode {vall.size}")
    vst = np.asarray(v_stable, dtype=np.float64)
    # docs/methods.md#response-latency (reference behaviour): the steady state is 0 when the stable
    # zone has <= 2 samples.
    ss = float(np.median(_finite(vst, "v_stable"))) if vst.size > LATENCY_MIN_SS_SAMPLES else 0.0
    if ss <= LATENCY_RESPONSE_GATE * v_ref:
        reason: LatencyReason = "no_response" if ss <= 0.0 else "weak_response"
        return LatencyScore(0.0, None, reason, ss, False)
    smoothed = moving_average(vall, _samples(LATENCY_SMOOTH_S, fps))[: vall.size]
    in_window = (tall >= t0) & (tall <= t0 + length_s)
    hits = np.flatnonzero(in_window & (smoothed >= LATENCY_THRESHOLD * v_ref))
    reached = hits.size > 0
    latency = max(0.0, float(tall[hits[0]]) - t0) if reached else length_s
    score = 1.0 - min(latency, length_s) / length_s
    return LatencyScore(score, latency, None, ss, reached)

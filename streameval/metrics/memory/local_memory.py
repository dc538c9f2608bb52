"""Local Memory of WorldMark (docs/methods.md#local_memory): no abrupt frame-to-frame mutations of
the world.

Frames are sampled by motion, not by time: ``mag = sqrt(Sx² + Srad²)``, the step
``δ = mean(mag) × (0.5 s × fps)`` (per episode, not a median over the run:
docs/methods.md#per-episode-motion-step), and a frame is sampled each time the cumulative magnitude
passes the next multiple of δ. Adjacent samples are compared by appearance (``1 − cos`` of the
patch-mean descriptors); a distance above ``TAU_MUT = 0.10`` is a mutation. Episode score
``100·(1 − cut)·(1 − mutation_rate)``.
A stand-in descriptor's distances enter the kernel multiplied by its calibrated
``distance_scale`` (docs/methods.md#cpu-defaults-and-backends; 1 for DINOv2, so WorldMark's
numbers are untouched), which puts them on WorldMark's scale: the threshold and the score stay
WorldMark's.

Decisions (where WorldMark leaves room; docs/methods.md#local_memory):

- **Sampled frames** (the reference's sampling, docs/methods.md#local_memory). ``cum`` is the
  sequential running sum of mag (a missing sample adds 0,
  docs/methods.md#missing-samples-are-skipped) and the threshold starts at δ. Signal index i is
  sampled when ``cum[i] >= threshold``; the threshold then grows by δ (repeated addition, as the
  reference). At most one sample per index: after a step that crosses several multiples, the
  following indices are sampled one by one until the threshold catches up. Sample i is frame i (the
  first frame of its flow pair), so the first sample is where the first δ is reached, not frame 0.
- **Motion floor** (docs/methods.md#still-episodes-are-frozen,
  docs/methods.md#still-video-floor). Frozen as well when ``mean(mag) < MOTION_FLOOR_PX``: with a
  per-episode δ a still, lossy video is otherwise sampled on codec noise and scores 100.
- **δ** is ``mean`` over the finite samples; missing samples add no arc. δ = 0 (no motion at
  all) is frozen. No signal at all → not_applicable "no flow samples"; signals that are all
  missing → ``missing`` "no finite flow sample" (the flow failed, nothing was measured).
- **Cut guard** (the reference's final_master rule). ``G = round(0.5 s × fps)`` frames, rounded
  half up (8 at 16 fps, 9 at 17 fps; docs/methods.md#real-frame-rate,
  docs/methods.md#full-precision-and-reference-index-rounding). Pair (a, b) is dropped when
  ``|a − c| <= G`` or ``|b − c| <= G`` for some cut c. A pair that straddles a cut with both
  ends farther than G is kept, as the reference keeps it.
- **Hard cut** = the cut list is non-empty (the detector found more than one scene).
  ``cuts is None`` = the detector failed/was unavailable → ``missing`` (never "no cut":
  docs/methods.md#a-failed-cut-detector-is-missing).
- **Not embedded.** A pair with a frame whose embedding row is NaN (not embedded) is skipped and
  listed as excluded; the mutation rate is over the remaining (counted) pairs.
- **Order of statuses.** Frozen (a property of the episode) is decided before the cut detector
  and the embeddings are looked at, so a frozen episode is ``not_applicable`` even when the cut
  detector failed. An episode with a hard cut but no countable pair is official with score 0 and
  ``mutation_rate = None`` (the cut alone decides it; the model mean skips the None).
- **raw** is the score as a fraction ``(1 − cut)(1 − mutation_rate)``; ``normalized = 100·raw``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from streameval.constants import (
    CUT_GUARD_S,
    LOCAL_DELTA_S,
    LOCAL_MIN_SAMPLES,
    MOTION_FLOOR_PX,
    TAU_MUT,
)
from streameval.core.arrays import Indices
from streameval.core.metric_result import MetricResult
from streameval.metrics.arc import (
    Appearance,
    flow_magnitude,
    json_float,
    json_floats,
    json_ints,
    json_pairs,
)
from streameval.metrics.segments import check_fps

PERCENT = 100.0
METRIC_NAME = "local_memory"
REASON_FROZEN = "frozen"
REASON_CUTS_MISSING = "cut detector failed/unavailable"
# docs/methods.md#still-video-floor: a still episode is frozen when its mean flow magnitude per
# signal sample is below MOTION_FLOOR_PX (constants.py), whatever δ makes of codec noise.


def cut_guard_frames(fps: float) -> int:
    """``round(0.5 s × fps)`` frames, half up: 8 at 16 fps, 12 at 24 fps
    (docs/methods.md#local_memory, docs/methods.md#real-frame-rate)."""
    return math.floor(CUT_GUARD_S * check_fps(fps) + 0.5)


def motion_step(mag: ArrayLike, fps: float) -> float | None:
    """``δ = mean(mag) × (0.5 s × fps)`` over the finite samples; None if there are none."""
    m = np.asarray(mag, dtype=np.float64)
    finite = m[np.isfinite(m)]
    if finite.size == 0:
        return None
    return float(np.mean(finite)) * LOCAL_DELTA_S * check_fps(fps)


def motion_indexed_samples(
    mag: ArrayLike, fps: float, delta: float | None = None
) -> NDArray[np.intp]:
    """Signal indices sampled at every δ of cumulative flow magnitude
    (docs/methods.md#local_memory).

    The reference's loop, in its float order: ``cum`` is the sequential running sum (numpy's
    cumsum; missing samples add 0), the threshold starts at δ and grows by repeated addition,
    one sample at most per index (see the module docstring). ``delta`` defaults to
    ``motion_step(mag, fps)``; with no motion (δ None or ≤ 0) nothing is sampled.
    """
    m = np.asarray(mag, dtype=np.float64)
    if m.ndim != 1:
        raise ValueError(f"mag must be a 1-D signal, got shape {m.shape}")
    step = motion_step(m, fps) if delta is None else float(delta)
    if step is None or not (math.isfinite(step) and step > 0.0):
        return np.zeros(0, dtype=np.intp)
    cum = np.cumsum(np.where(np.isfinite(m), m, 0.0))
    taken: list[int] = []
    threshold = step
    for i, c in enumerate(cum.tolist()):
        if c >= threshold:
            taken.append(i)
            threshold += step
    return np.asarray(taken, dtype=np.intp)


def guarded_pairs(a: Indices, b: Indices, cuts: Sequence[int], guard: int) -> NDArray[np.bool_]:
    """True for each pair (a, b) with an end within ``guard`` frames of a cut (reference rule)."""
    c = np.unique(np.asarray(list(cuts), dtype=np.intp))
    if c.size == 0 or a.size == 0:
        return np.zeros(a.shape, dtype=np.bool_)
    near_a = (np.abs(a[:, None] - c[None, :]) <= guard).any(axis=1)
    near_b = (np.abs(b[:, None] - c[None, :]) <= guard).any(axis=1)
    out: NDArray[np.bool_] = near_a | near_b
    return out


def _check_cuts(cuts: Sequence[int]) -> list[int]:
    out: list[int] = []
    for c in cuts:
        if isinstance(c, bool) or int(c) != c:
            raise ValueError(f"cuts must be frame indices (ints), got {c!r}")
        out.append(int(c))
    return sorted(set(out))


_MIN_SIMILARITY = 1e-6  # exp(−H²/σ²) floor for the wider kernel (1 − cos ≥ 1 under RFF noise)


def local_memory(
    sx: ArrayLike,
    srad: ArrayLike,
    embeddings: ArrayLike | None,
    cuts: Sequence[int] | None,
    fps: float,
    *,
    distance_scale: float = 1.0,
    local_exponent: float = 1.0,
) -> MetricResult:
    """Local Memory of one episode (docs/methods.md#local_memory; statuses
    docs/methods.md#statuses).

    ``sx``/``srad``: the stride-2 flow signals (NaN = missing); ``embeddings``: (T, D) per-frame
    appearance descriptors, NaN rows = not embedded (None = no appearance backend → missing);
    ``cuts``: frame indices of the shot-cut detector's cuts, None when it failed/was unavailable
    (→ missing); ``fps``: the rollout's real frame rate; ``distance_scale``: the embedding
    backend's calibration (``DescriptorCalibration``), applied to ``1 − cos`` before the
    threshold, so ``pair_distances`` are on WorldMark's scale; ``local_exponent``: the
    calibration's wider Local Memory kernel, ``d -> 1 − (1 − d)^local_exponent`` before the scale
    (1 = the distances as they are; docs/methods.md#cpu-defaults-and-backends).

    ``details["hard_cut"]`` (bool) and ``details["mutation_rate"]`` (float, None only when a hard
    cut left no countable pair) feed the model aggregate (``metrics.aggregation.local_memory``).
    """
    fps = check_fps(fps)
    if not (math.isfinite(distance_scale) and distance_scale > 0.0):
        raise ValueError(f"distance_scale must be a positive number, got {distance_scale!r}")
    if not (math.isfinite(local_exponent) and 0.0 < local_exponent <= 1.0):
        raise ValueError(f"local_exponent must lie in (0, 1], got {local_exponent!r}")
    mag = flow_magnitude(sx, srad)
    n_missing = int(np.count_nonzero(~np.isfinite(mag)))
    base: dict[str, Any] = {
        "n_signals": int(mag.size),
        "n_missing_signals": n_missing,
        "fps": fps,
        "tau_mut": TAU_MUT,
        "distance_scale": distance_scale,
    }
    if local_exponent != 1.0:
        base["local_exponent"] = local_exponent
    if mag.size == 0:
        return MetricResult.not_applicable("no flow samples", base)
    delta = motion_step(mag, fps)
    if delta is None:
        return MetricResult.missing("no finite flow sample", base)
    frames = motion_indexed_samples(mag, fps, delta)
    base.update(delta=json_float(delta), sampled_frames=json_ints(frames))
    mean_mag = float(np.mean(mag[np.isfinite(mag)]))
    base.update(mean_mag=json_float(mean_mag), motion_floor=MOTION_FLOOR_PX)
    # Frozen, then the cut detector: docs/methods.md#local_memory, docs/methods.md#still-video-floor
    # and docs/methods.md#a-failed-cut-detector-is-missing.
    if frames.size < LOCAL_MIN_SAMPLES:  # fewer than 5 samples -> frozen
        return MetricResult.not_applicable(REASON_FROZEN, {**base, "frozen": True})
    if mean_mag < MOTION_FLOOR_PX:  # still, whatever codec noise δ samples
        return MetricResult.not_applicable(
            REASON_FROZEN, {**base, "frozen": True, "below_motion_floor": True}
        )
    if cuts is None:  # a failed detector is missing, never "no cut"
        return MetricResult.missing(REASON_CUTS_MISSING, base)
    if embeddings is None:
        return MetricResult.missing("appearance embeddings unavailable", base)
    appearance = Appearance(embeddings)
    if not appearance.embedded.any():
        return MetricResult.missing("no frame embedded", base)

    cut_list = _check_cuts(cuts)
    guard = cut_guard_frames(fps)
    a, b = frames[:-1], frames[1:]
    dist = appearance.distance(a, b)
    if local_exponent != 1.0:  # the wider kernel; 1 − cos past 1 (RFF noise) is "unrelated"
        dist = 1.0 - np.clip(1.0 - dist, _MIN_SIMILARITY, 1.0) ** local_exponent
    if distance_scale != 1.0:  # WorldMark's descriptor: its distances exactly as they are
        dist = dist * distance_scale
    near_cut = guarded_pairs(a, b, cut_list, guard)
    not_embedded = ~np.isfinite(dist)
    counted = ~near_cut & ~not_embedded
    flagged = counted & (dist > TAU_MUT)
    n_counted = int(np.count_nonzero(counted))
    hard_cut = len(cut_list) > 0

    excluded = [
        {"pair": [int(x), int(y)], "reason": "cut guard" if nc else "not embedded"}
        for x, y, nc, ne in zip(
            a.tolist(), b.tolist(), near_cut.tolist(), not_embedded.tolist(), strict=True
        )
        if nc or ne
    ]
    mutation_rate = int(np.count_nonzero(flagged)) / n_counted if n_counted else None
    details: dict[str, Any] = {
        **base,
        "pairs": json_pairs(a, b),
        "pair_distances": json_floats(dist),
        "flagged_pairs": json_pairs(a[flagged], b[flagged]),
        "excluded_pairs": excluded,
        "n_pairs": int(a.size),
        "n_counted": n_counted,
        "n_flagged": int(np.count_nonzero(flagged)),
        "cuts": cut_list,
        "cut_guard_frames": guard,
        "hard_cut": hard_cut,
        "mutation_rate": mutation_rate,
    }
    if mutation_rate is None and not hard_cut:
        return MetricResult.not_applicable(
            "no adjacent sampled pair with both frames embedded", details
        )
    raw = (0.0 if hard_cut else 1.0) * (1.0 - (mutation_rate or 0.0))
    return MetricResult.official(raw, PERCENT * raw, details)

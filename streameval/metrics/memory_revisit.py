"""Revisit Memory of seed 000 (SPEC §5): leave a pose, come back — is the world remembered?

A *reversal* is a switch between opposite keys (W/S, A/D, L/R) in the per-frame key log; its
window is the segment before (outbound leg) and the segment after (return leg) the switch frame
t0. Four gates, in order, all derived from the flow signals:

1. ``dir`` — both legs have ``sum(v)/sum(|v|) ≥ 0.3`` over their full segments
   (``v = expected_sign·channel`` of the leg's key, ``protocol.keys``);
2. ``no_resp`` — fails when the return never reaches a 3-sample rolling mean of v
   ``≥ 0.2·mean|channel|``; the first such window marks the *response onset*;
3. ``gain`` — ``min/max`` of the two legs' arcs ``≥ 0.5``;
4. ``undershoot`` (rotation only) — fails when the outbound rotation is below 15°.

Surviving reversals are paired by equal cumulative arc: arc = ``mag = sqrt(Sx² + Srad²)`` for
translation (W/S, A/D), ``|Sx|`` for rotation (L/R). Outbound arc is measured back from t0, return
arc forward from the response onset. 200 depths in ``[0, min(out, return)]`` are scanned for the
first whose matched frames are ≥ 2 s apart (``reach_lo``); then 10 depths evenly spaced in
``[reach_lo, min(out, return)]`` each give one pair (i, j). Per pair ``d = 1 − cos`` of the two
frames' descriptors; per episode ``100 / (1 + mean(d)/TAU_C)`` over all pairs of all reversals.

Decisions (where SPEC §5 leaves room; the arc/frame convention is the one of ``arc.py``):

- **Stride (decided by the lead).** Every signal is the flow over ``FLOW_STRIDE = 2`` frame
  intervals, so arcs are ``Σ a_i / FLOW_STRIDE``: pixels of real image displacement per frame
  step. The 30 px tolerance, the 3° tolerance and the 15° gate therefore mean actual image
  displacement (the reference sums stride-2 flow undivided, i.e. about twice our arc).
- **Degrees ↔ px** via ``640 / 70`` px per degree (SPEC FIX): 3° = 27.43 px, 15° = 137.1 px.
- **"rotation 3° with a 5° lower bound"** is read as: the rotation match tolerance is 3°, and
  rotation depths never start below 5° (``reach_lo = max(reach_lo, 5°)``), so no rotation pair
  sits within the first 5° of the turn, where a 3° tolerance would pair frames that barely left
  the pose. (``max(3°, 5°)`` as a tolerance would make the 3° meaningless, so that reading was
  rejected.) Translation has no depth floor.
- **mean|channel|** of the ``no_resp`` gate is taken over the reversal window (both legs, the
  shared channel of the opposite keys). The rolling mean is trailing over consecutive *valid*
  samples (``v[k..k+2]``); the onset is the first sample of the first window that reaches the
  threshold.
- **Leg arcs** (gain gate and depth range): outbound = the whole outbound segment up to t0,
  return = from the response onset to the end of the return segment.
- **Matching.** At depth D the outbound frame is ``i = argmin |O(i) − D|`` over
  ``i ∈ [start_out, t0]`` with ``O(i) = C(t0) − C(i)``, the return frame ``j = argmin |R(j) − D|``
  over ``j ∈ [onset, end_ret]`` with ``R(j) = C(j) − C(onset)`` (ties: the frame nearer the turn
  on both legs — the later i, the earlier j — so a mirror-symmetric trip pairs mirror frames). The
  depth is dropped when either leg misses D by more than the tolerance (so ``|O(i) − R(j)|`` is at
  most twice the tolerance), when ``j ≤ i + 1``, when (i, j) repeats an earlier pair, or when a
  frame is not embedded. The reach scan checks only the gap ``j − i ≥ 2 s × fps``.
- **Coverage** = kept pairs / 10; below 0.3 the reversal is flagged ``partial``. A partial
  reversal's pairs still count (the flag is informative, as in SPEC §5).
- **Missing samples** (NaN in either channel) add no arc and are skipped by the gates; a leg
  with fewer than 3 valid samples makes the reversal not evaluable (SPEC §2).
- **Statuses.** No reversal → not_applicable "no reversal"; no pair → not_applicable with every
  reversal's reason; embeddings None while some reversal has pairable frames → missing.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from streameval.constants import (
    COV_GATE,
    DIR_EPS,
    DIR_GATE,
    FLOW_STRIDE,
    GAIN_GATE,
    MIN_GAP_S,
    MIN_WINDOW_SAMPLES,
    N_PAIRS_C2,
    REACH_SCAN_DEPTHS,
    RESPONSE_FRAC,
    RESPONSE_ROLL,
    ROT_DEPTH_FLOOR_DEG,
    ROT_MAG_GATE_DEG,
    ROT_TOL_DEG,
    TAU_C,
    TOL_ARC_PX,
)
from streameval.metrics.arc import (
    Appearance,
    FloatArray,
    IndexArray,
    cumulative_arc,
    degrees_to_flow_px,
    flow_magnitude,
    flow_px_to_degrees,
    json_float,
    json_floats,
    signal_pair,
)
from streameval.metrics.segments import SegmentSpan, check_fps, segment_spans
from streameval.protocol.keys import OPPOSITE, channel_of, expected_sign
from streameval.results import MetricResult

PERCENT = 100.0
METRIC_NAME = "revisit_memory"
Motion = Literal["trans", "rot"]


@dataclass(frozen=True, slots=True)
class Reversal:
    """A switch between opposite keys: ``out`` is the segment before t0, ``ret`` the one after."""

    out: SegmentSpan
    ret: SegmentSpan

    @property
    def t0(self) -> int:
        """The switch frame (first frame of the return segment)."""
        return self.ret.start

    @property
    def motion(self) -> Motion:
        """``rot`` for L/R, ``trans`` for W/S and A/D (seed 000: arc = |Sx| vs mag)."""
        return "rot" if self.out.family == "yaw" else "trans"

    @property
    def label(self) -> str:
        return f"reversal at frame {self.t0} ({self.out.key}→{self.ret.key})"


def find_reversals(frame_keys: Sequence[str], n_signals: int, fps: float) -> list[Reversal]:
    """Every switch between opposite keys in the per-frame key log (SPEC §5 Revisit Memory).

    Only a direct switch counts: W → S is a reversal, W → - → S is not.
    """
    spans = segment_spans(frame_keys, n_signals, fps)
    return [
        Reversal(prev, cur)
        for prev, cur in itertools.pairwise(spans)
        if prev.family is not None and OPPOSITE[prev.key] == cur.key
    ]


@dataclass(frozen=True, slots=True)
class Gate:
    """One gate of a reversal: its value, threshold and verdict (None = not evaluated)."""

    value: float | None
    threshold: float
    passed: bool | None
    extra: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "value": json_float(self.value),
            "threshold": float(self.threshold),
            "passed": self.passed,
            **self.extra,
        }


@dataclass(frozen=True, slots=True)
class ArcLegs:
    """Cumulative arcs of the two legs, as frames and arc values (flow px, stride-divided)."""

    out_frames: IndexArray  # i = start_out .. t0
    out_arc: FloatArray  # O(i) = C(t0) − C(i), non-increasing
    ret_frames: IndexArray  # j = onset .. end_ret
    ret_arc: FloatArray  # R(j) = C(j) − C(onset), non-decreasing

    @property
    def out_total(self) -> float:
        return float(self.out_arc[0])

    @property
    def ret_total(self) -> float:
        return float(self.ret_arc[-1])


def arc_legs(cum: FloatArray, out_start: int, t0: int, onset: int, ret_end: int) -> ArcLegs:
    """The outbound arc back from ``t0`` and the return arc forward from ``onset``."""
    i = np.arange(out_start, t0 + 1, dtype=np.intp)
    j = np.arange(onset, ret_end + 1, dtype=np.intp)
    return ArcLegs(i, cum[t0] - cum[i], j, cum[j] - cum[onset])


def match_depths(legs: ArcLegs, depths: FloatArray) -> tuple[IndexArray, IndexArray, FloatArray]:
    """For each depth D the frames i, j whose leg arcs are nearest to D, and the larger miss.

    Ties go to the frame nearer the turn on both legs (the last such i, the first such j), so a
    mirror-symmetric round trip gives mirror-symmetric pairs.
    """
    d = np.asarray(depths, dtype=np.float64)[:, None]
    out_err = np.abs(legs.out_arc[None, :] - d)
    ret_err = np.abs(legs.ret_arc[None, :] - d)
    ki = out_err.shape[1] - 1 - np.argmin(out_err[:, ::-1], axis=1)
    kj = np.argmin(ret_err, axis=1)
    rows = np.arange(d.shape[0])
    miss = np.maximum(out_err[rows, ki], ret_err[rows, kj])
    return legs.out_frames[ki], legs.ret_frames[kj], miss


def reach_lo(legs: ArcLegs, fps: float) -> float | None:
    """First of ``REACH_SCAN_DEPTHS`` depths in [0, min(out, ret)] whose pair is ≥ 2 s apart."""
    top = min(legs.out_total, legs.ret_total)
    scan = np.linspace(0.0, top, REACH_SCAN_DEPTHS)
    i, j, _ = match_depths(legs, scan)
    ok = np.flatnonzero((j - i) >= MIN_GAP_S * fps)
    return float(scan[ok[0]]) if ok.size else None


def rolling_onset(v: FloatArray, threshold: float) -> tuple[int | None, float | None]:
    """First k with ``mean(v[k:k+3]) ≥ threshold`` and the peak rolling mean (None if < 3)."""
    if v.size < RESPONSE_ROLL:
        return None, None
    rolled = np.convolve(v, np.ones(RESPONSE_ROLL) / RESPONSE_ROLL, mode="valid")
    hits = np.flatnonzero(rolled >= threshold)
    return (int(hits[0]) if hits.size else None), float(np.max(rolled))


@dataclass(frozen=True, slots=True)
class _Episode:
    sx: FloatArray
    srad: FloatArray
    valid: NDArray[np.bool_]
    cum: dict[Motion, FloatArray]
    fps: float

    def leg(self, span: SegmentSpan) -> IndexArray:
        idx = np.arange(span.full.start, span.full.stop, dtype=np.intp)
        return idx[self.valid[idx]]

    def channel(self, key: str, idx: IndexArray) -> FloatArray:
        ch: FloatArray = (self.sx if channel_of(key) == "sx" else self.srad)[idx]
        return ch


def _tolerance(motion: Motion) -> float:
    return degrees_to_flow_px(ROT_TOL_DEG) if motion == "rot" else TOL_ARC_PX


def _gates(
    ep: _Episode, rev: Reversal, out_idx: IndexArray, ret_idx: IndexArray
) -> tuple[dict[str, Gate], str | None, int | None, ArcLegs | None]:
    """Evaluate the gates in order; returns (gates, failure reason, onset frame, arc legs)."""
    na = Gate(None, 0.0, None, {})
    gates: dict[str, Gate] = {}
    # dir: SPEC §5, over the full segments.
    ratios = []
    for span, idx in ((rev.out, out_idx), (rev.ret, ret_idx)):
        v = expected_sign(span.key) * ep.channel(span.key, idx)
        ratios.append(float(np.sum(v)) / (float(np.sum(np.abs(v))) + DIR_EPS))
    dir_value = min(ratios)
    dir_ok = all(r >= DIR_GATE for r in ratios)
    gates["dir"] = Gate(dir_value, DIR_GATE, dir_ok, {"out": ratios[0], "ret": ratios[1]})
    rest = ["no_resp", "gain"] + (["undershoot"] if rev.motion == "rot" else [])
    if not dir_ok:
        gates.update({g: na for g in rest})
        return gates, f"dir gate failed ({dir_value:.2f} < {DIR_GATE})", None, None

    # no_resp: 3-sample rolling mean of v on the return vs 0.2·mean|channel| of the window.
    window = np.concatenate([out_idx, ret_idx])
    threshold = RESPONSE_FRAC * float(np.mean(np.abs(ep.channel(rev.ret.key, window))))
    v_ret = expected_sign(rev.ret.key) * ep.channel(rev.ret.key, ret_idx)
    k, peak = rolling_onset(v_ret, threshold)
    onset = None if k is None else int(ret_idx[k])
    gates["no_resp"] = Gate(peak, threshold, k is not None, {"onset_frame": onset})
    if onset is None:
        gates.update({g: na for g in rest[1:]})
        return (
            gates,
            f"no_resp gate failed (the return never reaches {threshold:.3g} = "
            f"{RESPONSE_FRAC}·mean|channel|)",
            None,
            None,
        )

    # gain: outbound arc up to t0, return arc from the onset to the end of the return segment.
    legs = arc_legs(ep.cum[rev.motion], rev.out.full.start, rev.t0, onset, rev.ret.full.stop)
    hi = max(legs.out_total, legs.ret_total)
    gain = min(legs.out_total, legs.ret_total) / hi if hi > 0.0 else 0.0
    gates["gain"] = Gate(
        gain,
        GAIN_GATE,
        gain >= GAIN_GATE,
        {"out_arc_px": legs.out_total, "ret_arc_px": legs.ret_total},
    )
    if gain < GAIN_GATE:
        gates.update({g: na for g in rest[2:]})
        return gates, f"gain gate failed ({gain:.2f} < {GAIN_GATE})", onset, legs

    if rev.motion == "rot":
        turn = flow_px_to_degrees(legs.out_total)
        ok = turn >= ROT_MAG_GATE_DEG
        gates["undershoot"] = Gate(turn, ROT_MAG_GATE_DEG, ok, {"unit": "deg"})
        if not ok:
            return (
                gates,
                f"undershoot gate failed ({turn:.1f}° < {ROT_MAG_GATE_DEG:g}°)",
                onset,
                legs,
            )
    return gates, None, onset, legs


def _pairs(
    ep: _Episode, rev: Reversal, legs: ArcLegs, appearance: Appearance | None
) -> tuple[dict[str, Any], list[float], str | None, bool]:
    """Equal-arc pairs of one gated reversal: (details, kept d, reason if none, pairable)."""
    tol = _tolerance(rev.motion)
    top = min(legs.out_total, legs.ret_total)
    info: dict[str, Any] = {
        "tolerance_px": tol,
        "max_depth_px": top,
        "reach_lo_px": None,
        "coverage": 0.0,
        "partial": True,
    }
    lo = reach_lo(legs, ep.fps)
    if lo is None:
        return info, [], f"no depth with a ≥ {MIN_GAP_S:g} s frame gap", False
    if rev.motion == "rot":
        lo = max(lo, degrees_to_flow_px(ROT_DEPTH_FLOOR_DEG))
    info["reach_lo_px"] = lo
    if lo > top:
        floor = f"the {ROT_DEPTH_FLOOR_DEG:g}° depth floor exceeds the shared arc"
        return info, [], floor, False
    depths = np.linspace(lo, top, N_PAIRS_C2)
    i, j, miss = match_depths(legs, depths)
    embedded = (
        appearance.has(i) & appearance.has(j)
        if appearance is not None
        else np.zeros(i.shape, dtype=np.bool_)
    )
    d = appearance.distance(i, j) if appearance is not None else np.full(i.shape, np.nan)
    seen: set[tuple[int, int]] = set()
    pairs: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    kept_d: list[float] = []
    pairable = False
    for k in range(depths.size):
        ik, jk = int(i[k]), int(j[k])
        reason: str | None = None
        if miss[k] > tol:
            reason = "missed tolerance"
        elif jk <= ik + 1:
            reason = "j <= i + 1"
        elif (ik, jk) in seen:
            reason = "duplicate"
        else:
            seen.add((ik, jk))
            pairable = True
            if not embedded[k]:
                reason = "not embedded"
        if reason is not None:
            dropped.append(
                {
                    "depth_px": float(depths[k]),
                    "i": ik,
                    "j": jk,
                    "miss_px": float(miss[k]),
                    "reason": reason,
                }
            )
            continue
        pairs.append(
            {
                "i": ik,
                "j": jk,
                "depth_px": float(depths[k]),
                "miss_px": float(miss[k]),
                "d": float(d[k]),
            }
        )
        kept_d.append(float(d[k]))
    coverage = len(pairs) / N_PAIRS_C2
    info.update(
        depths_px=json_floats(depths),
        pairs=pairs,
        dropped=dropped,
        coverage=coverage,
        partial=coverage < COV_GATE,
    )
    if pairs:
        return info, kept_d, None, pairable
    counts: dict[str, int] = {}
    for entry in dropped:
        counts[entry["reason"]] = counts.get(entry["reason"], 0) + 1
    summary = ", ".join(f"{n} {r}" for r, n in counts.items())
    return info, [], f"no pair kept ({summary})", pairable


def revisit_memory(
    sx: ArrayLike,
    srad: ArrayLike,
    frame_keys: Sequence[str],
    embeddings: ArrayLike | None,
    fps: float,
) -> MetricResult:
    """Revisit Memory of one episode (SPEC §5; statuses SPEC §8).

    ``sx``/``srad``: stride-2 flow signals (NaN = missing); ``frame_keys``: one key per frame
    (W S A D L R or "-"), at least as many as signals; ``embeddings``: (T, D) per-frame
    descriptors, NaN rows = not embedded (None = no appearance backend); ``fps``: real fps.

    ``details["pair_distances"]`` is the flat list of every kept pair's d (for model pooling),
    with ``pair_distances_trans`` / ``pair_distances_rot`` split by motion.
    """
    fps = check_fps(fps)
    sx_a, srad_a = signal_pair(sx, srad)
    valid = np.isfinite(sx_a) & np.isfinite(srad_a)
    mag = flow_magnitude(sx_a, srad_a)
    abs_sx = np.where(valid, np.abs(sx_a), np.nan)
    ep = _Episode(
        sx_a,
        srad_a,
        valid,
        {
            "trans": cumulative_arc(mag / FLOW_STRIDE),
            "rot": cumulative_arc(abs_sx / FLOW_STRIDE),
        },
        fps,
    )
    reversals = find_reversals(frame_keys, sx_a.size, fps)
    appearance = Appearance(embeddings) if embeddings is not None else None

    entries: list[dict[str, Any]] = []
    reasons: list[str] = []
    pooled: dict[Motion, list[float]] = {"trans": [], "rot": []}
    all_d: list[float] = []
    any_pairable = False
    for rev in reversals:
        out_idx, ret_idx = ep.leg(rev.out), ep.leg(rev.ret)
        entry: dict[str, Any] = {
            "t0_frame": rev.t0,
            "out_key": rev.out.key,
            "ret_key": rev.ret.key,
            "motion": rev.motion,
            "out_frames": [rev.out.start, rev.out.end],
            "ret_frames": [rev.ret.start, rev.ret.end],
            "n_out_samples": int(out_idx.size),
            "n_ret_samples": int(ret_idx.size),
            "gates": None,
            "onset_frame": None,
            "pairs": [],
            "coverage": None,  # set once the reversal reaches pairing
            "partial": None,
        }
        entries.append(entry)
        few = [
            name
            for name, idx in (("outbound", out_idx), ("return", ret_idx))
            if idx.size < MIN_WINDOW_SAMPLES
        ]
        if few:
            reason = (
                f"fewer than {MIN_WINDOW_SAMPLES} signal samples in the {' and '.join(few)} leg"
            )
            entry.update(status="not_evaluable", reason=reason)
            reasons.append(f"{rev.label}: {reason}")
            continue
        gates, failed, onset, legs = _gates(ep, rev, out_idx, ret_idx)
        entry.update(gates={k: g.to_json() for k, g in gates.items()}, onset_frame=onset)
        if failed is not None or legs is None:
            entry.update(status="gate_failed", reason=failed)
            reasons.append(f"{rev.label}: {failed}")
            continue
        info, kept, why, pairable = _pairs(ep, rev, legs, appearance)
        any_pairable = any_pairable or pairable
        entry.update(info)
        if why is not None:
            entry.update(status="no_pairs", reason=why)
            reasons.append(f"{rev.label}: {why}")
            continue
        entry.update(status="paired", reason=None)
        pooled[rev.motion].extend(kept)
        all_d.extend(kept)

    details: dict[str, Any] = {
        "fps": fps,
        "n_signals": int(sx_a.size),
        "n_missing_signals": int(np.count_nonzero(~valid)),
        "flow_stride": FLOW_STRIDE,
        "tau_c": TAU_C,
        "n_reversals": len(reversals),
        "reversals": entries,
        "pair_distances": all_d,
        "pair_distances_trans": pooled["trans"],
        "pair_distances_rot": pooled["rot"],
    }
    if not reversals:
        return MetricResult.not_applicable("no reversal", details)
    if appearance is None and any_pairable:
        return MetricResult.missing("appearance embeddings unavailable", details)
    if not all_d:
        return MetricResult.not_applicable("; ".join(reasons), details)
    raw = float(np.mean(np.asarray(all_d, dtype=np.float64)))
    details["mean_d"] = raw
    return MetricResult.official(raw, revisit_score(raw), details)


def revisit_score(mean_d: float) -> float:
    """``100 / (1 + mean(d) / TAU_C)`` (seed 000, TAU_C = 1.0)."""
    return PERCENT / (1.0 + float(mean_d) / TAU_C)

"""Revisit Memory of WorldMark (docs/methods.md#revisit_memory): leave a pose, come back — is the
world remembered?

A *reversal* is a switch between opposite keys (W/S, A/D, L/R). Its window is the segment before
(outbound leg, ``[seg_lo, t0)``) and the segment after (return leg, ``[t0, seg_hi)``) the switch.
Everything below follows the reference's ``consistency_v2`` expressions
(docs/methods.md#departures-from-the-reference), with its departures: real fps
(docs/methods.md#real-frame-rate), the 640 px analysis width for degrees
(docs/methods.md#degrees-on-the-analysis-width), the arc divided by the stride
(docs/methods.md#revisit-arcs-count-each-frame-step-once) and missing samples skipped
(docs/methods.md#missing-samples-are-skipped):

Gates, in order (the first failure names the reversal's status):

1. ``dir`` — per leg, ``sign·Σch / Σ|ch|`` of the leg key's channel (0 when ``Σ|ch| < 1e-6``);
   fails if the smaller is below 0.3;
2. ``no_resp`` — ``ch`` = the return key's channel over the return leg; no response when it has
   fewer than 4 samples or ``mean|ch| < 1e-6``; otherwise the first j in ``0 … len−4`` (the last
   3-sample window is never examined, as in the reference) with
   ``mean(sign·ch[j … j+2]) >= 0.2·mean|ch|`` gives ``t_resp = t0 + j``;
3. ``gain`` — with ``so``/``sr`` = mean|channel| of the outbound / return leg (the channel of
   the first key, shared by opposite keys), fails if ``min/max(so, sr, 1e-6) < 0.5``;
4. ``undershoot`` (rotation) — fails if the outbound arc sum is below 15° (``15·640/70`` px).

Pairing: the per-sample arc is ``mag/2`` (translation) or ``|Sx|/2`` (rotation), divided once by the
stride (docs/methods.md#revisit-arcs-count-each-frame-step-once). No pairs when either leg has fewer
than 3 samples. The outbound arc at k is the arc from ``seg_lo + k`` to t0 (reversed running sum),
the return arc at k the running sum from t0 (**measured from the switch**, not from t_resp).
``rstart = clip(t_resp − t0)``; depths run from ``max(lo, ret[rstart])`` to
``min(tot_out, ret[-1])``. A frame for depth a is the first argmin of ``|arc − a|`` on each leg (the
return searched from rstart on). 200 depths (``np.linspace``) are scanned for the first whose frames
are ≥ 2 s apart; from there 10 depths to the top: a depth is dropped when either leg misses it by
more than the tolerance (30 px; rotation 3°), a pair is kept when ``j > i + 1`` and new. ``lo`` is 0
(translation) or 5° (rotation). ``partial`` = ``tot_ret < 0.3·tot_out``, informative.

Score: ``d = 1 − cos`` of the two frames' descriptors, pairs pooled over every reversal, per
episode ``100 / (1 + mean d)``. A pair whose frame is not embedded is skipped and listed.
Statuses: no reversal → not_applicable "no reversal"; no pair → not_applicable with the gate
reasons; embeddings None while pairs exist → missing.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from streameval.constants import (
    COV_GATE,
    DIR_GATE,
    FLOW_STRIDE,
    GAIN_GATE,
    MIN_GAP_S,
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
from streameval.core.arrays import F64
from streameval.core.metric_result import MetricResult
from streameval.metrics.arc import (
    Appearance,
    flow_magnitude,
    json_float,
    px_per_degree,
    signal_pair,
)
from streameval.metrics.segments import SegmentSpan, check_fps, segment_spans
from streameval.protocol.keys import OPPOSITE, channel_of, expected_sign, parse_key

PERCENT = 100.0
METRIC_NAME = "revisit_memory"
Motion = Literal["trans", "rot"]
_SUM_EPS = 1e-6  # reference: Σ|ch| or mean|ch| below this is "no motion"
_MIN_LEG = 3  # reference: no pairs when t0 − seg_lo < 3 or seg_hi − t0 < 3


@dataclass(frozen=True, slots=True)
class Reversal:
    """A switch between opposite keys: ``[seg_lo, t0)`` out, ``[t0, seg_hi)`` back (signals)."""

    out_key: str
    ret_key: str
    seg_lo: int
    t0: int
    seg_hi: int

    @property
    def motion(self) -> Motion:
        """``rot`` for L/R, ``trans`` for W/S and A/D (WorldMark: arc = |Sx| vs mag)."""
        return "rot" if self.out_key in ("L", "R") else "trans"

    @property
    def label(self) -> str:
        return f"reversal at frame {self.t0} ({self.out_key}→{self.ret_key})"


def _reversals_of(spans: Sequence[SegmentSpan], n_signals: int) -> list[Reversal]:
    out: list[Reversal] = []
    for prev, cur in itertools.pairwise(spans):
        if prev.family is not None and OPPOSITE[prev.key] == cur.key:
            clip = [min(max(x, 0), n_signals) for x in (prev.start, cur.start, cur.end)]
            out.append(Reversal(prev.key, cur.key, clip[0], clip[1], clip[2]))
    return out


def find_reversals(frame_keys: Sequence[str], n_signals: int, fps: float) -> list[Reversal]:
    """Every direct switch between opposite keys in a per-frame key log (W → - → S is not)."""
    return _reversals_of(segment_spans(frame_keys, n_signals, fps), n_signals)


def equal_split_reversals(keys: Sequence[str], n_signals: int) -> list[Reversal]:
    """Reversals of a delivery without an action log, split as the reference splits Revisit:
    boundary b at ``round((b/n)·N)`` signal indices (Python's round, half to even)."""
    canon = [parse_key(k) for k in keys]
    n = len(canon)
    at = [round((b / n) * n_signals) for b in range(n + 1)]
    return [
        Reversal(canon[b - 1], canon[b], at[b - 1], at[b], at[b + 1])
        for b in range(1, n)
        if OPPOSITE[canon[b - 1]] == canon[b]
    ]


@dataclass(frozen=True, slots=True)
class _Signals:
    sx: F64
    srad: F64
    arc: dict[Motion, F64]  # per-sample arc / stride; NaN where missing
    fps: float
    # flow pixels per degree of yaw (docs/methods.md#known-intrinsics): 640 / 70 unless the
    # episode's camera is known
    px_per_degree: float = field(default_factory=px_per_degree)

    def degrees(self, deg: float) -> float:
        """``deg`` degrees of yaw as horizontal flow pixels on the analysis frame."""
        return deg * self.px_per_degree

    def channel(self, key: str, lo: int, hi: int) -> F64:
        """The key's channel over [lo, hi), missing samples skipped
        (docs/methods.md#missing-samples-are-skipped)."""
        ch = (self.sx if channel_of(key) == "sx" else self.srad)[lo:hi]
        out: F64 = ch[np.isfinite(ch)]
        return out


def _dir(sig: _Signals, key: str, lo: int, hi: int) -> float:
    ch = sig.channel(key, lo, hi)
    tot = float(np.sum(np.abs(ch)))
    return 0.0 if tot < _SUM_EPS else expected_sign(key) * float(np.sum(ch)) / tot


def _response(sig: _Signals, rev: Reversal) -> tuple[int | None, float | None]:
    """(t_resp, threshold) of the no_resp gate; t_resp None when the return never responds."""
    lo, hi = rev.t0, rev.seg_hi
    raw = (sig.sx if channel_of(rev.ret_key) == "sx" else sig.srad)[lo:hi]
    frames = np.flatnonzero(np.isfinite(raw)) + lo
    ch = raw[np.isfinite(raw)]
    if ch.size == 0:
        return None, None
    mean_abs = float(np.mean(np.abs(ch)))
    threshold = RESPONSE_FRAC * mean_abs
    if ch.size < RESPONSE_ROLL + 1 or mean_abs < _SUM_EPS:
        return None, threshold
    v = expected_sign(rev.ret_key) * ch
    for j in range(ch.size - RESPONSE_ROLL):
        if float(np.mean(v[j : j + RESPONSE_ROLL])) >= threshold:
            return int(frames[j]), threshold
    return None, threshold


def _gates(sig: _Signals, rev: Reversal) -> tuple[dict[str, Any], str | None, int | None]:
    """The gates in order; returns (evaluated gates, first failing gate name, t_resp)."""
    gates: dict[str, Any] = {}
    d_out = _dir(sig, rev.out_key, rev.seg_lo, rev.t0)
    d_ret = _dir(sig, rev.ret_key, rev.t0, rev.seg_hi)
    ok = min(d_out, d_ret) >= DIR_GATE
    gates["dir"] = {"dir_out": d_out, "dir_ret": d_ret, "passed": ok}
    if not ok:
        return gates, "dir", None
    t_resp, threshold = _response(sig, rev)
    gates["no_resp"] = {"t_resp": t_resp, "threshold": json_float(threshold)}
    gates["no_resp"]["passed"] = t_resp is not None
    if t_resp is None:
        return gates, "no_resp", None
    so = float(np.mean(np.abs(sig.channel(rev.out_key, rev.seg_lo, rev.t0))))
    sr = float(np.mean(np.abs(sig.channel(rev.out_key, rev.t0, rev.seg_hi))))
    ratio = min(so, sr) / max(so, sr, _SUM_EPS)
    ok = ratio >= GAIN_GATE
    gates["gain"] = {"out_mean_abs": so, "ret_mean_abs": sr, "ratio": ratio, "passed": ok}
    if not ok:
        return gates, "gain", t_resp
    if rev.motion == "rot":
        out_sum = float(np.nansum(sig.arc["rot"][rev.seg_lo : rev.t0]))
        gate = sig.degrees(ROT_MAG_GATE_DEG)
        ok = out_sum >= gate
        gates["undershoot"] = {
            "out_arc_sum": out_sum,
            "gate": gate,
            "out_deg": out_sum / sig.degrees(1.0),
            "passed": ok,
        }
        if not ok:
            return gates, "undershoot", t_resp
    return gates, None, t_resp


def _first_argmin(x: F64, a: float) -> int:
    return int(np.argmin(np.abs(x - a)))


def pair_frames(
    arc: F64, rev: Reversal, t_resp: int, fps: float, per_degree: float | None = None
) -> tuple[list[tuple[int, int, float]], dict[str, Any]]:
    """Equal-arc pairs (i, j, resid) of one gated reversal, and the pairing details;
    ``per_degree``: flow pixels per degree (default 640 / 70)."""
    scale = px_per_degree() if per_degree is None else per_degree
    tol = ROT_TOL_DEG * scale if rev.motion == "rot" else TOL_ARC_PX
    lo = ROT_DEPTH_FLOOR_DEG * scale if rev.motion == "rot" else 0.0
    a_out = np.nan_to_num(arc[rev.seg_lo : rev.t0], nan=0.0)
    a_ret = np.nan_to_num(arc[rev.t0 : rev.seg_hi], nan=0.0)
    out_arc = np.cumsum(a_out[::-1])[::-1]
    ret_cum = np.cumsum(a_ret)
    info: dict[str, Any] = {
        "tot_out": float(out_arc[0]) if out_arc.size else 0.0,
        "tot_ret": float(ret_cum[-1]) if ret_cum.size else 0.0,
        "tol": tol,
        "lo": lo,
        "early_exit": None,
    }
    info["partial"] = info["tot_ret"] < COV_GATE * info["tot_out"]
    if rev.t0 - rev.seg_lo < _MIN_LEG or rev.seg_hi - rev.t0 < _MIN_LEG:
        info["early_exit"] = "short_leg"
        return [], info
    rstart = max(0, min(t_resp - rev.t0, ret_cum.size - 1))
    reach_lo = max(lo, float(ret_cum[rstart]))
    reach_hi = min(info["tot_out"], float(ret_cum[-1]))
    info.update(rstart=rstart, reach_lo=reach_lo, reach_hi=reach_hi)
    if reach_hi <= reach_lo:
        info["early_exit"] = "reach"
        return [], info
    tail = ret_cum[rstart:]

    def frames_at(a: float) -> tuple[int, int]:
        return _first_argmin(out_arc, a), rstart + _first_argmin(tail, a)

    min_gap = MIN_GAP_S * fps
    lo_t: float | None = None
    for a in np.linspace(reach_lo, reach_hi, REACH_SCAN_DEPTHS).tolist():
        oi, jj = frames_at(a)
        if (rev.t0 + jj) - (rev.seg_lo + oi) >= min_gap:
            lo_t = a
            break
    info.update(min_gap_frames=min_gap, lo_t=lo_t)
    if lo_t is None:
        info["early_exit"] = "gap"
        return [], info
    pairs: list[tuple[int, int, float]] = []
    seen: set[tuple[int, int]] = set()
    depths: list[list[Any]] = []
    for a in np.linspace(lo_t, reach_hi, N_PAIRS_C2).tolist():
        oi, jj = frames_at(a)
        i, j = rev.seg_lo + oi, rev.t0 + jj
        o, r = float(out_arc[oi]), float(ret_cum[jj])
        verdict = "kept"
        if abs(o - a) > tol or abs(r - a) > tol:
            verdict = "tolerance"
        elif not j > i + 1:
            verdict = "gap"
        elif (i, j) in seen:
            verdict = "duplicate"
        else:
            seen.add((i, j))
            pairs.append((i, j, abs(r - o)))
        depths.append([a, i, j, verdict])
    info["depths"] = depths
    return pairs, info


def revisit_memory(
    sx: ArrayLike,
    srad: ArrayLike,
    frame_keys: Sequence[str],
    embeddings: ArrayLike | None,
    fps: float,
    per_degree: float | None = None,
) -> MetricResult:
    """Revisit Memory of one episode with an action log (docs/methods.md#revisit_memory;
    statuses docs/methods.md#statuses).

    ``sx``/``srad``: stride-2 flow signals (NaN = missing); ``frame_keys``: one key per frame
    (W S A D L R or "-"), at least as many as signals; ``embeddings``: (T, D) per-frame
    descriptors, NaN rows = not embedded (None = no appearance backend); ``fps``: real fps.
    """
    n = int(np.size(sx)) if np.ndim(sx) == 1 else 0
    reversals = find_reversals(frame_keys, n, fps)
    return revisit_memory_for(sx, srad, reversals, embeddings, fps, per_degree)


def revisit_memory_for(
    sx: ArrayLike,
    srad: ArrayLike,
    reversals: Sequence[Reversal],
    embeddings: ArrayLike | None,
    fps: float,
    per_degree: float | None = None,
) -> MetricResult:
    """``revisit_memory`` on given reversals (``find_reversals`` or ``equal_split_reversals``).

    ``details["pair_distances"]`` is the flat list of every kept pair's d (model pooling).
    """
    fps = check_fps(fps)
    sx_a, srad_a = signal_pair(sx, srad)
    mag = flow_magnitude(sx_a, srad_a)
    abs_sx = np.where(np.isfinite(mag), np.abs(sx_a), np.nan)
    arcs: dict[Motion, F64] = {"trans": mag / FLOW_STRIDE, "rot": abs_sx / FLOW_STRIDE}
    sig = _Signals(sx_a, srad_a, arcs, fps, px_per_degree() if per_degree is None else per_degree)
    appearance = Appearance(embeddings) if embeddings is not None else None
    entries: list[dict[str, Any]] = []
    reasons: list[str] = []
    all_pairs: list[tuple[int, int]] = []
    for rev in reversals:
        entry: dict[str, Any] = {
            "keys": rev.out_key + rev.ret_key,
            "motion": rev.motion,
            "t0": rev.t0,
            "seg_lo": rev.seg_lo,
            "seg_hi": rev.seg_hi,
            "pairs": [],
        }
        entries.append(entry)
        gates, failed, t_resp = _gates(sig, rev)
        entry["gates"] = gates
        if failed is not None or t_resp is None:
            entry["status"] = failed
            reasons.append(f"{rev.label}: {failed} gate failed")
            continue
        pairs, info = pair_frames(sig.arc[rev.motion], rev, t_resp, fps, sig.px_per_degree)
        entry.update(info)
        entry["pairs"] = [[i, j] for i, j, _ in pairs]
        entry["resid"] = [r for _, _, r in pairs]
        entry["status"] = "paired" if pairs else "no_pairs"
        if not pairs:
            reasons.append(f"{rev.label}: no pairs ({info['early_exit'] or 'tolerance'})")
        all_pairs.extend((i, j) for i, j, _ in pairs)
    details: dict[str, Any] = {
        "fps": fps,
        "n_signals": int(sx_a.size),
        "n_missing_signals": int(np.count_nonzero(~np.isfinite(mag))),
        "flow_stride": FLOW_STRIDE,
        "tau_c": TAU_C,
        "n_reversals": len(reversals),
        "n_reversals_passed": sum(e["status"] in ("paired", "no_pairs") for e in entries),
        "reversals": entries,
        "pair_distances": [],
    }
    if not reversals:
        return MetricResult.not_applicable("no reversal", details)
    if not all_pairs:
        return MetricResult.not_applicable("; ".join(reasons), details)
    if appearance is None:
        return MetricResult.missing("appearance embeddings unavailable", details)
    i_arr = np.asarray([p[0] for p in all_pairs], dtype=np.intp)
    j_arr = np.asarray([p[1] for p in all_pairs], dtype=np.intp)
    last = appearance.n_frames - 1
    d = appearance.distance(np.minimum(i_arr, last), np.minimum(j_arr, last))
    k = 0
    for entry in entries:
        n_pairs = len(entry["pairs"])
        entry["dists"] = [json_float(x) for x in d[k : k + n_pairs].tolist()]
        k += n_pairs
    kept = d[np.isfinite(d)]
    details["pair_distances"] = kept.tolist()
    details["n_not_embedded"] = int(d.size - kept.size)
    if kept.size == 0:
        return MetricResult.missing("no paired frame embedded", details)
    raw = float(np.mean(kept))
    details["mean_d"] = raw
    details["score_std"] = float(np.std(PERCENT / (1.0 + kept / TAU_C)))
    return MetricResult.official(raw, revisit_score(raw), details)


def revisit_score(mean_d: float) -> float:
    """``100 / (1 + mean(d) / TAU_C)`` (WorldMark, TAU_C = 1.0)."""
    return PERCENT / (1.0 + float(mean_d) / TAU_C)

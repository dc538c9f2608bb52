"""Control metrics of seed 000 (SPEC §4): Direction Accuracy, Direction Purity, Motion
Stability and Response Latency, each as a pure per-segment kernel, plus ``control_metrics``,
which scores a whole episode into the eight trans/rot columns.

No I/O and no state: the online accumulator (``online.py``), ``rescore`` and replay all call
``control_metrics`` on the same signals, so the final value is bit-identical everywhere (SPEC §4).
Percentiles and medians are numpy's defaults (linear interpolation), as in the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from streameval.constants import (
    DIR_EPS,
    LATENCY_MIN_SS_SAMPLES,
    LATENCY_REF_PCT,
    LATENCY_RESPONSE_GATE,
    LATENCY_SMOOTH_S,
    LATENCY_THRESHOLD,
    MIN_WINDOW_SAMPLES,
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
from streameval.metrics.segments import SegmentSpan, check_fps, segment_spans
from streameval.metrics.smoothing import moving_average
from streameval.protocol.keys import Family, channel_of, expected_sign
from streameval.results import MetricResult

# Not in constants.py (reported to the lead):
PURITY_EVEN_SPLIT = 0.5  # SPEC §4: fwd and unfitted lat/yaw segments split |Sx| half/half
HICCUP_MIN_S = STABILITY_SMOOTH_S  # SPEC §4: a hiccup lasts >= 0.3 s, the smoothing window
PERCENT = 100.0  # master-table scale (seed 000: columns normalised to [0, 100])

FloatArray = NDArray[np.float64]
LatencyReason = Literal["no_response", "weak_response"]

CONTROL_METRIC_NAMES: tuple[str, ...] = tuple(
    f"{metric}_{pool}"
    for metric in (
        "direction_accuracy",
        "direction_purity",
        "motion_stability",
        "response_latency",
    )
    for pool in ("trans", "rot")
)

_POOLS: dict[str, tuple[frozenset[str], str]] = {
    "trans": (frozenset({"fwd", "lat"}), "fwd/lat"),
    "rot": (frozenset({"yaw"}), "yaw"),
}


@dataclass(frozen=True, slots=True)
class MotionType:
    """Depth-parallax motion-type weights of one lat/yaw segment (SPEC §3).

    ``p_yaw`` is ``1 - p_trans`` by definition; both are checked to lie in [0, 1] and to sum
    to 1, so accuracy (which uses ``p_yaw``) and purity (``1 - p_trans``) agree.
    """

    p_trans: float
    p_yaw: float
    depth_source: str | None = None

    def __post_init__(self) -> None:
        for name, p in (("p_trans", self.p_trans), ("p_yaw", self.p_yaw)):
            if not (math.isfinite(p) and 0.0 <= p <= 1.0):
                raise ValueError(f"MotionType.{name} must be in [0, 1], got {p!r}")
        if abs(self.p_trans + self.p_yaw - 1.0) > 1e-6:
            raise ValueError(
                f"MotionType: p_trans + p_yaw must be 1, got {self.p_trans!r} + {self.p_yaw!r}"
            )

    @classmethod
    def from_p_trans(cls, p_trans: float, depth_source: str | None = None) -> MotionType:
        """The weights as SPEC §3 defines them: ``p_yaw = 1 - p_trans``."""
        return cls(float(p_trans), 1.0 - float(p_trans), depth_source)


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


def _finite(x: ArrayLike, name: str) -> FloatArray:
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
    """Direction Accuracy of one segment (SPEC §4): is the motion in the commanded direction?

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
    """Direction Purity of one segment (SPEC §4): how much of the motion is on the commanded axis.

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


def count_hiccups(vs: FloatArray, low: float, high: float, min_run: int) -> int:
    """Hysteresis count of dips (SPEC §4).

    A dip starts at a sample below ``low`` and lasts until the first sample above ``high``
    (samples in the hysteresis band between them still belong to the dip). It is a hiccup if it
    lasted at least ``min_run`` samples; a dip still open at the end counts too.
    """
    hiccups = 0
    run = 0
    in_dip = False
    for x in vs.tolist():
        if in_dip:
            if x > high:
                hiccups += run >= min_run
                in_dip = False
            else:
                run += 1
        elif x < low:
            in_dip, run = True, 1
    if in_dip and run >= min_run:
        hiccups += 1
    return hiccups


def motion_stability_segment(v: ArrayLike, fps: float) -> StabilityScore:
    """Motion Stability of one segment (SPEC §4): once responding, is the speed steady?

    ``v`` is the stable-zone response with missing samples already skipped; seconds for the
    hiccup rate are ``len(v) / fps``. The decay term compares the means of the last and first
    ``int(3*fps)`` smoothed samples.
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
    """``v_ref = P75(|channel|) + 1e-9`` over the episode's keyed samples (SPEC §4)."""
    return float(np.percentile(_finite(channel_abs, "channel_abs"), LATENCY_REF_PCT)) + DIR_EPS


def response_latency_switch(
    v_segment: ArrayLike,
    t_segment: ArrayLike,
    v_stable: ArrayLike,
    v_ref: float,
    t0: float,
    length_s: float,
    fps: float,
) -> LatencyScore:
    """Response Latency at one key switch (SPEC §4): how soon the new key takes effect.

    ``v_segment``/``t_segment`` are the response and sample times over the whole new segment,
    ``v_stable`` the response over its stable zone (for the steady state), ``v_ref`` from
    ``reference_speed``, ``t0`` the switch time and ``length_s`` the segment length L.
    """
    fps = check_fps(fps)
    if not (math.isfinite(length_s) and length_s > 0.0):
        raise ValueError(f"length_s must be > 0, got {length_s!r}")
    vseg = _finite(v_segment, "v_segment")
    tseg = _finite(t_segment, "t_segment")
    if tseg.size != vseg.size:
        raise ValueError(f"t_segment has {tseg.size} samples, v_segment {vseg.size}")
    vst = np.asarray(v_stable, dtype=np.float64)
    # SPEC §4 (reference behaviour): the steady state is 0 when the stable zone has <= 2 samples.
    ss = float(np.median(_finite(vst, "v_stable"))) if vst.size > LATENCY_MIN_SS_SAMPLES else 0.0
    if ss <= LATENCY_RESPONSE_GATE * v_ref:
        return LatencyScore(0.0, None, "no_response" if ss <= 0.0 else "weak_response", ss, False)
    smoothed = moving_average(vseg, _samples(LATENCY_SMOOTH_S, fps))
    hits = np.flatnonzero(smoothed >= LATENCY_THRESHOLD * v_ref)
    reached = hits.size > 0
    latency = float(tseg[hits[0]]) - t0 if reached else length_s
    score = 1.0 - min(latency, length_s) / length_s
    return LatencyScore(score, latency, None, ss, reached)


# --------------------------------------------------------------------------------------------
# Episode level
# --------------------------------------------------------------------------------------------


def _json_float(x: float | None) -> float | None:
    """Details are JSON-ready: plain floats, NaN/inf as None (SPEC §8: nothing imputed)."""
    if x is None:
        return None
    value = float(x)
    return value if math.isfinite(value) else None


@dataclass(frozen=True, slots=True)
class _Window:
    """The valid (finite) samples of one segment window."""

    window: range
    index: NDArray[np.intp]

    @property
    def n(self) -> int:
        return int(self.index.size)


def _window(r: range, valid: NDArray[np.bool_]) -> _Window:
    idx = np.arange(r.start, r.stop, dtype=np.intp)
    return _Window(r, idx[valid[r.start : r.stop]])


def _entry(span: SegmentSpan, w: _Window) -> dict[str, Any]:
    return {
        "index": span.index,
        "key": span.key,
        "family": span.family,
        "start_frame": span.start,
        "end_frame": span.end,
        "window_start": w.window.start,
        "window_end": w.window.stop,
        "n_samples": w.n,
        "n_missing": len(w.window) - w.n,
        "status": "not_applicable",
        "reason": f"fewer than {MIN_WINDOW_SAMPLES} samples",
    }


def _scored(entry: dict[str, Any], value: float, parts: dict[str, Any]) -> dict[str, Any]:
    entry.update(status="scored", reason=None, value=_json_float(value))
    entry.update({k: _json_float(v) if isinstance(v, float) else v for k, v in parts.items()})
    return entry


@dataclass(frozen=True, slots=True)
class _Column:
    entries: list[dict[str, Any]]
    values: list[float]

    def add(self, entry: dict[str, Any], value: float) -> None:
        self.entries.append(entry)
        self.values.append(value)


def _result(
    col: _Column,
    *,
    empty_reason: str | None,
    what: str,
    window: str,
    normalize: Callable[[float], float],
    details: dict[str, Any],
    in_range: tuple[float, float] | None = None,
) -> MetricResult:
    """Mean over the scorable segments; not_applicable, with its reason, when there are none.

    ``what`` names the candidates ("yaw segments") and ``window`` their window ("stable
    samples") for the reason, e.g. "all yaw segments have fewer than 3 stable samples".
    """
    kept: list[float] = []
    for entry, value in zip(col.entries, col.values, strict=True):
        if entry["status"] != "scored":
            continue
        if not math.isfinite(value) or (in_range and not in_range[0] <= value <= in_range[1]):
            # SPEC §4: scores outside [0, 1] are dropped at aggregation (never clamped).
            entry.update(status="dropped", reason="score outside [0, 1]")
        else:
            kept.append(value)
    n_na = sum(e["status"] == "not_applicable" for e in col.entries)
    n_dropped = sum(e["status"] == "dropped" for e in col.entries)
    details = {
        **details,
        "n_segments": len(col.entries),
        "n_scored": len(kept),
        "n_not_applicable": n_na,
        "n_dropped": n_dropped,
        "segments": col.entries,
    }
    if empty_reason is not None:
        return MetricResult.not_applicable(empty_reason, details)
    if not kept:
        few = f"fewer than {MIN_WINDOW_SAMPLES} {window}"
        reason = (
            f"all {what} have {few}"
            if n_dropped == 0
            else f"no scorable {what}: {n_na} with {few}, {n_dropped} with a score outside [0, 1]"
        )
        return MetricResult.not_applicable(reason, details)
    raw = float(np.mean(np.asarray(kept, dtype=np.float64)))
    return MetricResult.official(raw, normalize(raw), details)


def _percent(raw: float) -> float:
    return PERCENT * raw


def _percent_of_positive(raw: float) -> float:
    # SPEC §4: accuracy column = 100 * max(0, mean over segments); raw keeps the sign.
    return PERCENT * max(0.0, raw)


def _type_info(family: Family, mt: MotionType | None) -> dict[str, Any]:
    if family == "fwd":
        return {"type_gate": "not_needed", "p_trans": None, "p_yaw": None, "depth_source": None}
    if mt is None:
        return {"type_gate": "unavailable", "p_trans": None, "p_yaw": None, "depth_source": None}
    return {
        "type_gate": "fitted",
        "p_trans": float(mt.p_trans),
        "p_yaw": float(mt.p_yaw),
        "depth_source": mt.depth_source,
    }


@dataclass(frozen=True, slots=True)
class _Episode:
    """The validated signals of one episode and its segment windows."""

    sx: FloatArray
    srad: FloatArray
    fps: float
    spans: list[SegmentSpan]
    stable: dict[int, _Window]
    full: dict[int, _Window]

    def channel(self, span: SegmentSpan, w: _Window) -> FloatArray:
        ch: FloatArray = (self.sx if channel_of(span.key) == "sx" else self.srad)[w.index]
        return ch

    def v(self, span: SegmentSpan, w: _Window) -> FloatArray:
        out: FloatArray = expected_sign(span.key) * self.channel(span, w)
        return out


def _score_segment(
    ep: _Episode, span: SegmentSpan, family: Family, mt: MotionType | None, cols: list[_Column]
) -> None:
    """Accuracy, purity and stability of one segment over its stable zone, into ``cols``."""
    w = ep.stable[span.index]
    entries = [_entry(span, w) for _ in cols]
    if w.n < MIN_WINDOW_SAMPLES:  # SPEC §2: the segment is not_applicable
        for col, entry in zip(cols, entries, strict=True):
            col.add(entry, math.nan)
        return
    v = ep.v(span, w)
    info = _type_info(family, mt)
    # SPEC §4: w = p_trans (lat), p_yaw (yaw), 1 (fwd); 1 as well when there is no fit.
    weight = 1.0
    if mt is not None and family != "fwd":
        weight = mt.p_trans if family == "lat" else mt.p_yaw
    acc = direction_accuracy_segment(v, np.abs(ep.channel(span, w)), weight)
    _scored(entries[0], acc.gated, {"dir": acc.direction, "weight": acc.weight, **info})
    sx_m = float(np.mean(np.abs(ep.sx[w.index])))
    sr_m = float(np.mean(np.abs(ep.srad[w.index])))
    pur = direction_purity_segment(sx_m, sr_m, family, None if mt is None else mt.p_trans)
    _scored(
        entries[1],
        pur.score,
        {
            "sx_abs_mean": sx_m,
            "srad_abs_mean": sr_m,
            "lateral": pur.lateral,
            "yaw": pur.yaw,
            "fwd": pur.fwd,
            "split": "fitted" if info["type_gate"] == "fitted" else "even",
            **info,
        },
    )
    st = motion_stability_segment(v, ep.fps)
    _scored(
        entries[2],
        st.score,
        {
            "g": st.g,
            "g_below_min": st.sustain is None,
            "sustain": st.sustain,
            "hiccups": st.hiccups,
            "hr": st.hr,
            "decay": st.decay,
        },
    )
    for col, entry, value in zip(cols, entries, (acc.gated, pur.score, st.score), strict=True):
        col.add(entry, value)


def _latency_column(
    ep: _Episode,
    pool: str,
    families: frozenset[str],
    label: str,
    v_ref: float | None,
    provisional: bool,
) -> MetricResult:
    """Response Latency: one score per switch (segment j >= 1) into a segment of this pool."""
    switches = [s for s in ep.spans if s.index >= 1 and s.family in families]
    col = _Column([], [])
    for s in switches:
        w = ep.full[s.index]
        entry = _entry(s, w)
        value = math.nan
        if w.n >= MIN_WINDOW_SAMPLES and v_ref is not None:
            length_s = (s.end - s.start) / ep.fps
            t0 = s.start / ep.fps
            sw = ep.stable[s.index]
            lat = response_latency_switch(
                ep.v(s, w), w.index / ep.fps, ep.v(s, sw), v_ref, t0, length_s, ep.fps
            )
            _scored(
                entry,
                lat.score,
                {
                    "latency_s": lat.latency_s,
                    "response": lat.reason,
                    "reached": lat.reached,
                    "steady_state": lat.steady_state,
                    "n_stable": sw.n,
                    "t0_s": t0,
                    "length_s": length_s,
                    "previous_key": ep.spans[s.index - 1].key,
                },
            )
            value = lat.score
        col.add(entry, value)
    empty: str | None = None
    if len(ep.spans) <= 1:
        empty = "no key switch"
    elif not switches:
        empty = f"no key switch into a {label} segment"
    return _result(
        col,
        empty_reason=empty,
        what=f"switches into a {label} segment",
        window="samples",
        normalize=_percent,
        in_range=(0.0, 1.0),
        details={
            "provisional": provisional,
            "pool": pool,
            "window": "new_segment",
            "v_ref": _json_float(v_ref),
            "threshold": _json_float(None if v_ref is None else LATENCY_THRESHOLD * v_ref),
            "percentile": "linear",
        },
    )


def control_metrics(
    sx: ArrayLike,
    srad: ArrayLike,
    frame_keys: Sequence[str],
    fps: float,
    motion_types: Mapping[int, MotionType | None] | None = None,
    *,
    provisional: bool = False,
) -> dict[str, MetricResult]:
    """Score one episode: the eight control columns of seed 000 (SPEC §4, statuses §8).

    ``sx``/``srad`` hold one sample per signal index (NaN = missing, skipped inside windows: a
    sample is missing when either channel is not finite); ``frame_keys`` has one key per frame,
    at least as many as there are signals; ``motion_types`` maps segment index to its fit (absent
    or None = no fit). "trans" pools fwd+lat segments, "rot" yaw; latency pools switches by the
    family of the *new* segment. ``provisional`` is copied into every result's details.
    """
    fps = check_fps(fps)
    sx_a = np.array(sx, dtype=np.float64)
    srad_a = np.array(srad, dtype=np.float64)
    if sx_a.ndim != 1 or sx_a.shape != srad_a.shape:
        raise ValueError(
            f"sx and srad must be 1-D of equal length, got {sx_a.shape} and {srad_a.shape}"
        )
    types: Mapping[int, MotionType | None] = motion_types or {}
    spans = segment_spans(frame_keys, sx_a.size, fps)
    valid = np.isfinite(sx_a) & np.isfinite(srad_a)
    keyed = [s for s in spans if s.family is not None]
    ep = _Episode(
        sx_a,
        srad_a,
        fps,
        spans,
        stable={s.index: _window(s.stable, valid) for s in keyed},
        full={s.index: _window(s.full, valid) for s in keyed},
    )
    # SPEC §4: v_ref = P75(|channel|) over every keyed sample of the episode (full segments).
    abs_all = np.concatenate(
        [np.empty(0, dtype=np.float64)] + [np.abs(ep.channel(s, ep.full[s.index])) for s in keyed]
    )
    v_ref = reference_speed(abs_all) if abs_all.size else None

    results: dict[str, MetricResult] = {}
    for pool, (families, label) in _POOLS.items():
        cols = [_Column([], []), _Column([], []), _Column([], [])]
        segs = [s for s in keyed if s.family in families]
        for s in segs:
            if s.family is not None:  # always: keyed spans have a family
                _score_segment(ep, s, s.family, types.get(s.index), cols)
        empty = None if segs else f"no {label} segments"
        base = {"provisional": provisional, "pool": pool, "window": "stable_zone"}
        columns = (
            ("direction_accuracy", cols[0], _percent_of_positive, base),
            ("direction_purity", cols[1], _percent, base),
            ("motion_stability", cols[2], _percent, {**base, "percentile": "linear"}),
        )
        for metric, col, normalize, details in columns:
            results[f"{metric}_{pool}"] = _result(
                col,
                empty_reason=empty,
                what=f"{label} segments",
                window="stable samples",
                normalize=normalize,
                details=details,
            )
        results[f"response_latency_{pool}"] = _latency_column(
            ep, pool, families, label, v_ref, provisional
        )
    return {name: results[name] for name in CONTROL_METRIC_NAMES}

"""Control metrics of WorldMark (docs/methods.md#control-metrics): Direction Accuracy, Direction
Purity, Motion Stability and Response Latency, each as a pure per-segment kernel, plus
``control_metrics``, which scores a whole episode into the eight trans/rot columns.

No I/O and no state: the online accumulator (``online.py``), ``rescore`` and replay all call
``control_metrics`` on the same signals, so the final value is bit-identical everywhere
(docs/methods.md#control-metrics).
Percentiles and medians are numpy's defaults (linear interpolation), as in the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from streameval.constants import (
    LATENCY_MIN_SS_SAMPLES,
    LATENCY_THRESHOLD,
    MIN_WINDOW_SAMPLES,
    MOTION_FLOOR_PX,
)
from streameval.core.arrays import F64
from streameval.core.metric_result import MetricResult
from streameval.metrics.arc import json_float as _json_float
from streameval.metrics.control.segment import (  # re-exported (``__all__``)
    AccuracyScore,
    LatencyScore,
    PurityScore,
    StabilityScore,
    count_hiccups,
    direction_accuracy_segment,
    direction_purity_segment,
    motion_stability_segment,
    reference_speed,
    response_latency_switch,
)
from streameval.metrics.segments import SegmentSpan, check_fps, segment_spans
from streameval.metrics.short_keys import key_length_text, seconds_up, shortest_key_s
from streameval.protocol.keys import Family, channel_of, expected_sign

# Not in constants.py (only the control kernels read them):
# master-table scale: WorldMark's columns are normalised to [0, 100]
# (docs/methods.md#scales-and-rounding)
PERCENT = 100.0
# docs/methods.md#still-control-segments-score-zero: the reason a segment below the floor carries
REASON_NO_MOTION = "no_motion"


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
    """Depth-parallax motion-type weights of one lat/yaw segment (docs/methods.md#motion-type-fit).

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
        """The weights as docs/methods.md#motion-type-fit defines them: ``p_yaw = 1 - p_trans``."""
        return cls(float(p_trans), 1.0 - float(p_trans), depth_source)


__all__ = [
    "CONTROL_METRIC_NAMES",
    "AccuracyScore",
    "LatencyScore",
    "MotionType",
    "PurityScore",
    "StabilityScore",
    "control_metrics",
    "control_metrics_for_spans",
    "count_hiccups",
    "direction_accuracy_segment",
    "direction_purity_segment",
    "motion_stability_segment",
    "reference_speed",
    "response_latency_switch",
]


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


def _too_short(w: _Window, fps: float | None) -> dict[str, Any]:
    """``{"reason_tail", "shortest_key_s"}`` when the key's length (not missing samples) keeps
    the window below ``MIN_WINDOW_SAMPLES`` (docs/methods.md#shortest-keys), else ``{}``."""
    if fps is None or len(w.window) >= MIN_WINDOW_SAMPLES:
        return {}
    return {
        "reason_tail": f" (the key is too short: {key_length_text(fps)})",
        "shortest_key_s": shortest_key_s(fps),
    }


def _entry(span: SegmentSpan, w: _Window, fps: float | None = None) -> dict[str, Any]:
    """A segment's entry, not_applicable until scored. With ``fps``, a window too short for the
    key's length says so and names the shortest key that would be scored."""
    short = _too_short(w, fps)
    entry = {
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
        "reason": f"fewer than {MIN_WINDOW_SAMPLES} samples" + short.get("reason_tail", ""),
    }
    if short:
        entry["shortest_key_s"] = short["shortest_key_s"]
    return entry


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


@dataclass(frozen=True, slots=True)
class _Tally:
    """A column's entries after classification: the kept values (in entry order) and the
    counts. Adding tallies of consecutive segments gives the tally of them all, which is how
    the online accumulator classifies a closed segment once (``online.py``)."""

    entries: list[dict[str, Any]]
    kept: list[float]
    n_na: int
    n_dropped: int

    def __add__(self, other: _Tally) -> _Tally:
        return _Tally(
            self.entries + other.entries,
            self.kept + other.kept,
            self.n_na + other.n_na,
            self.n_dropped + other.n_dropped,
        )


def _tally(col: _Column, in_range: tuple[float, float] | None) -> _Tally:
    """Classify ``col``'s entries: scored values outside ``in_range`` or not finite are
    dropped (docs/methods.md#statuses: never clamped), the others kept."""
    kept: list[float] = []
    for entry, value in zip(col.entries, col.values, strict=True):
        if entry["status"] != "scored":
            continue
        if not math.isfinite(value) or (in_range and not in_range[0] <= value <= in_range[1]):
            entry.update(status="dropped", reason="score outside [0, 1]")
        else:
            kept.append(value)
    n_na = sum(e["status"] == "not_applicable" for e in col.entries)
    n_dropped = sum(e["status"] == "dropped" for e in col.entries)
    return _Tally(col.entries, kept, n_na, n_dropped)


def _result(
    col: _Column | _Tally,
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
    tally = col if isinstance(col, _Tally) else _tally(col, in_range)
    kept, n_na, n_dropped = tally.kept, tally.n_na, tally.n_dropped
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
        need = [e["shortest_key_s"] for e in col.entries if "shortest_key_s" in e]
        if need:  # docs/methods.md#shortest-keys: say how long a key would be scored
            reason += f" (keys too short: keys of at least {seconds_up(max(need))})"
        return MetricResult.not_applicable(reason, details)
    raw = float(np.mean(np.asarray(kept, dtype=np.float64)))
    return MetricResult.official(raw, normalize(raw), details)


def _percent(raw: float) -> float:
    return PERCENT * raw


def _percent_of_positive(raw: float) -> float:
    # docs/methods.md#direction-accuracy: accuracy column = 100 * max(0, mean over segments); raw
    # keeps the sign.
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

    sx: F64
    srad: F64
    fps: float
    spans: list[SegmentSpan]
    stable: dict[int, _Window]
    full: dict[int, _Window]
    valid: NDArray[np.intp]

    def channel(self, span: SegmentSpan, w: _Window) -> F64:
        ch: F64 = (self.sx if channel_of(span.key) == "sx" else self.srad)[w.index]
        return ch

    def v(self, span: SegmentSpan, w: _Window) -> F64:
        out: F64 = expected_sign(span.key) * self.channel(span, w)
        return out

    def v_episode(self, key: str) -> tuple[F64, F64]:
        """The response to ``key`` over every valid sample of the episode, with its times."""
        ch = (self.sx if channel_of(key) == "sx" else self.srad)[self.valid]
        v: F64 = expected_sign(key) * ch
        return v, self.valid / self.fps


def _score_segment(
    ep: _Episode, span: SegmentSpan, family: Family, mt: MotionType | None, cols: list[_Column]
) -> None:
    """Accuracy, purity and stability of one segment over its stable zone, into ``cols``."""
    w = ep.stable[span.index]
    entries = [_entry(span, w, ep.fps) for _ in cols]
    if w.n < MIN_WINDOW_SAMPLES:  # the segment is not_applicable (docs/methods.md#control-segments)
        for col, entry in zip(cols, entries, strict=True):
            col.add(entry, math.nan)
        return
    v = ep.v(span, w)
    info = _type_info(family, mt)
    # docs/methods.md#direction-accuracy: w = p_trans (lat), p_yaw (yaw), 1 (fwd); 1 as well when
    # there is no fit.
    weight = 1.0
    if mt is not None and family != "fwd":
        weight = mt.p_trans if family == "lat" else mt.p_yaw
    acc = direction_accuracy_segment(v, np.abs(ep.channel(span, w)), weight)
    sx_m = float(np.mean(np.abs(ep.sx[w.index])))
    sr_m = float(np.mean(np.abs(ep.srad[w.index])))
    pur = direction_purity_segment(sx_m, sr_m, family, None if mt is None else mt.p_trans)
    # docs/methods.md#still-control-segments-score-zero: below the still-video floor the signs
    # are codec noise; score what a noise-free still video gives (0 / (0 + 1e-9)).
    motion = float(np.mean(np.hypot(ep.sx[w.index], ep.srad[w.index])))
    still = motion < MOTION_FLOOR_PX
    floor = {"motion": motion, "motion_floor": MOTION_FLOOR_PX}
    acc_value = 0.0 if still else acc.gated
    pur_value = 0.0 if still else pur.score
    _scored(entries[0], acc_value, {"dir": acc.direction, "weight": acc.weight, **info, **floor})
    _scored(
        entries[1],
        pur_value,
        {
            "sx_abs_mean": sx_m,
            "srad_abs_mean": sr_m,
            "lateral": pur.lateral,
            "yaw": pur.yaw,
            "fwd": pur.fwd,
            "split": "fitted" if info["type_gate"] == "fitted" else "even",
            **info,
            **floor,
        },
    )
    if still:
        entries[0]["reason"] = entries[1]["reason"] = REASON_NO_MOTION
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
    for col, entry, value in zip(cols, entries, (acc_value, pur_value, st.score), strict=True):
        col.add(entry, value)


def _latency_column(
    ep: _Episode, pool: str, families: frozenset[str], label: str, provisional: bool
) -> MetricResult:
    """Response Latency: one score per switch (segment j >= 1) into a segment of this pool.

    Each switch has its own v_ref, from the new key's channel over the whole episode
    (docs/methods.md#response-latency).
    A switch into a segment with no signal sample at all (the episode ended first) is
    not_applicable; otherwise it is scored, 0 when the stable zone is too short for a steady
    state, as the reference does.
    """
    switches = [s for s in ep.spans if s.index >= 1 and s.family in families]
    col = _Column([], [])
    for s in switches:
        col.add(*_latency_switch(ep, s, ep.spans[s.index - 1].key))
    return _latency_result(col, len(ep.spans), bool(switches), pool, label, provisional)


def _latency_switch(
    ep: _Episode,
    s: SegmentSpan,
    previous_key: str,
    v_ref: float | None = None,
    around: tuple[F64, F64] | None = None,
) -> tuple[dict[str, Any], float]:
    """The entry and value (NaN unless scored) of the switch into segment ``s``.

    ``v_ref`` defaults to ``reference_speed`` of the new key's channel over ``ep.valid``; the
    online accumulator passes its own (the same percentile over the prefix so far), and with
    ``around`` the response and times of the valid samples around the switch only (enough
    of them on each side that the smoothing over the window is the whole episode's).
    """
    w = ep.full[s.index]
    entry = _entry(s, w)
    if w.n == 0:
        return entry, math.nan
    sw = ep.stable[s.index]
    if sw.n <= LATENCY_MIN_SS_SAMPLES:
        # docs/methods.md#short-keys-are-not-applicable: a segment with no steady state to reach
        # is not a switch the model failed (the reference scores it 0, no_response)
        short = _too_short(sw, ep.fps)
        entry.update(
            reason=f"{sw.n} stable samples, {MIN_WINDOW_SAMPLES} needed for a steady state"
            + short.get("reason_tail", f" ({len(sw.window) - sw.n} missing)"),
            n_stable=sw.n,
            t0_s=s.lo_s,
            length_s=s.length_s,
            previous_key=previous_key,
        )
        if short:
            entry["shortest_key_s"] = short["shortest_key_s"]
        return entry, math.nan
    v_all, t_all = ep.v_episode(s.key) if around is None else around
    if v_ref is None:
        v_ref = reference_speed(np.abs(v_all))
    lat = response_latency_switch(v_all, t_all, ep.v(s, sw), v_ref, s.lo_s, s.length_s, ep.fps)
    parts = {"latency_s": lat.latency_s, "response": lat.reason, "reached": lat.reached}
    parts.update(steady_state=lat.steady_state, v_ref=v_ref, threshold=LATENCY_THRESHOLD * v_ref)
    parts.update(n_stable=sw.n, t0_s=s.lo_s, length_s=s.length_s)
    _scored(entry, lat.score, {**parts, "previous_key": previous_key})
    return entry, lat.score


def _latency_result(
    col: _Column | _Tally,
    n_spans: int,
    any_switch: bool,
    pool: str,
    label: str,
    provisional: bool,
) -> MetricResult:
    empty: str | None = None
    if n_spans <= 1:
        empty = "no key switch"
    elif not any_switch:
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
            "window": "whole_episode",
            "v_ref": "per switch: P75 of |new key's channel| over the episode",
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
    """Score one episode with an action log: the eight control columns of WorldMark
    (docs/methods.md#control-metrics; statuses docs/methods.md#statuses).

    ``sx``/``srad`` hold one sample per signal index (NaN = missing, skipped inside windows: a
    sample is missing when either channel is not finite); ``frame_keys`` has one key per frame,
    at least as many as there are signals; ``motion_types`` maps segment index to its fit (absent
    or None = no fit). "trans" pools fwd+lat segments, "rot" yaw; latency pools switches by the
    family of the *new* segment. ``provisional`` is copied into every result's details.
    """
    fps = check_fps(fps)
    n_signals = int(np.size(sx)) if np.ndim(sx) == 1 else 0  # a bad shape is reported below
    spans = segment_spans(frame_keys, n_signals, fps)
    return control_metrics_for_spans(sx, srad, spans, fps, motion_types, provisional=provisional)


def control_metrics_for_spans(
    sx: ArrayLike,
    srad: ArrayLike,
    spans: Sequence[SegmentSpan],
    fps: float,
    motion_types: Mapping[int, MotionType | None] | None = None,
    *,
    provisional: bool = False,
) -> dict[str, MetricResult]:
    """``control_metrics`` on given segments: those of an action log (``segment_spans``) or of
    a delivery without one (``equal_split_spans``, the reference's split of the last sample's
    time). Same inputs and outputs otherwise.
    """
    fps = check_fps(fps)
    sx_a = np.array(sx, dtype=np.float64)
    srad_a = np.array(srad, dtype=np.float64)
    if sx_a.ndim != 1 or sx_a.shape != srad_a.shape:
        raise ValueError(
            f"sx and srad must be 1-D of equal length, got {sx_a.shape} and {srad_a.shape}"
        )
    types: Mapping[int, MotionType | None] = motion_types or {}
    valid = np.isfinite(sx_a) & np.isfinite(srad_a)
    keyed = [s for s in spans if s.family is not None]
    ep = _Episode(
        sx_a,
        srad_a,
        fps,
        list(spans),
        stable={s.index: _window(s.stable, valid) for s in keyed},
        full={s.index: _window(s.full, valid) for s in keyed},
        valid=np.flatnonzero(valid),
    )
    results: dict[str, MetricResult] = {}
    for pool, (families, label) in _POOLS.items():
        cols = [_Column([], []), _Column([], []), _Column([], [])]
        segs = [s for s in keyed if s.family in families]
        for s in segs:
            if s.family is not None:  # always: keyed spans have a family
                _score_segment(ep, s, s.family, types.get(s.index), cols)
        results.update(_segment_results(pool, label, cols, bool(segs), provisional))
        results[f"response_latency_{pool}"] = _latency_column(
            ep, pool, families, label, provisional
        )
    return {name: results[name] for name in CONTROL_METRIC_NAMES}


def _segment_results(
    pool: str,
    label: str,
    cols: Sequence[_Column | _Tally],
    any_segment: bool,
    provisional: bool,
) -> dict[str, MetricResult]:
    """Accuracy, purity and stability of one pool from its segments' entries and values."""
    empty = None if any_segment else f"no {label} segments"
    base = {"provisional": provisional, "pool": pool, "window": "stable_zone"}
    columns = (
        ("direction_accuracy", cols[0], _percent_of_positive, base),
        ("direction_purity", cols[1], _percent, base),
        ("motion_stability", cols[2], _percent, {**base, "percentile": "linear"}),
    )
    return {
        f"{metric}_{pool}": _result(
            col,
            empty_reason=empty,
            what=f"{label} segments",
            window="stable samples",
            normalize=normalize,
            details=details,
        )
        for metric, col, normalize, details in columns
    }

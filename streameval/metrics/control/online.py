"""Incremental control metrics while an episode runs
(docs/methods.md#control-metrics, torchmetrics' functional/stateful split).

Rebuilding the whole track and rescoring it at every provisional update costs O(episode) per
update; this keeps the state that makes each update cost about one segment instead:

- **Segment boundaries** are found by scanning only the frame keys that arrived since the
  last update (``invalidate`` rescans from a frame whose key was overwritten).
- **Closed segments are scored once.** A segment is *final* when a later segment has begun
  and every signal of it has arrived: its windows (docs/methods.md#control-segments first/last rules
  included), its samples and its motion-type fit can no longer change, so its accuracy, purity and
  stability entries are computed once, with the kernel's own per-segment code, and kept.
  For those segments the provisional values are exactly the kernel's on the prefix.
- **The open segment(s)** — the last one, and the one before while its last signals are
  still in flight — are rescored at each update: work bounded by one segment's length.
- **Latency is provisional until the end** (docs/methods.md#control-metrics): each switch's v_ref is
  the P75 of |new key's channel| over every valid sample of the episode, and its smoothing runs over
  the whole episode, so both keep moving. The per-channel P75 is kept as samples arrive (a
  two-heap order statistic, equal to ``np.percentile`` exactly: ``streaming_stats.py``), the
  valid positions in a growing buffer, and a switch reads only the valid samples around its
  window (a smoothing window's margin on each side, so the smoothed values it scans equal the
  whole prefix's). A closed switch keeps the score computed at the update at which it closed,
  the open switch uses the current prefix. The final value is the kernel's, computed over the
  whole cache at episode end (``score_episode``), so live == rescore == replay holds whatever
  the provisional values were.

Aggregating the columns is a mean over the kept per-segment values (a list per column, as the
kernel does), i.e. linear in the number of segments with a tiny constant — a 30-minute
episode has a few hundred segments. ``bench/online_cost.py`` measures the per-frame cost at
minute 1 and minute 30.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streameval.constants import DIR_EPS, LATENCY_REF_PCT, LATENCY_SMOOTH_S
from streameval.core.arrays import F64
from streameval.core.metric_result import MetricResult
from streameval.metrics.control.kernels import (
    _POOLS,
    CONTROL_METRIC_NAMES,
    MotionType,
    _Column,
    _Episode,
    _latency_result,
    _latency_switch,
    _score_segment,
    _segment_results,
    _Tally,
    _tally,
    _Window,
)
from streameval.metrics.control.segment import _samples
from streameval.metrics.control.streaming_stats import StreamingPercentile, ValidPositions
from streameval.metrics.segments import SegmentSpan, check_fps, segment_span
from streameval.protocol.keys import channel_of, expected_sign

# Motion type of a segment: called with its span when it is scored (once, when it is final).
MotionTypeOf = Callable[[SegmentSpan], MotionType | None]
Entry = dict[str, Any]


_LATENCY_RANGE = (0.0, 1.0)  # as control._latency_result


@dataclass(slots=True)
class _Scored:
    """What a segment contributes to its pool, classified: one tally each for accuracy,
    purity, stability and the switch into it (empty for segment 0)."""

    family: str | None
    tallies: list[_Tally]


@dataclass(slots=True)
class _PoolState:
    """The closed segments of one pool, classified once: entries, kept values and counts per
    column, extended in place as segments close (amortised O(1) per segment)."""

    entries: list[list[Entry]] = field(default_factory=lambda: [[], [], [], []])
    kept: list[list[float]] = field(default_factory=lambda: [[], [], [], []])
    n_na: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    n_dropped: list[int] = field(default_factory=lambda: [0, 0, 0, 0])

    def add(self, scored: _Scored) -> None:
        for c, t in enumerate(scored.tallies):
            self.entries[c].extend(t.entries)
            self.kept[c].extend(t.kept)
            self.n_na[c] += t.n_na
            self.n_dropped[c] += t.n_dropped

    def with_open(self, c: int, open_tallies: list[_Tally]) -> _Tally:
        """Column ``c`` over the closed segments then the open ones (segment order)."""
        # copies: a result handed out must not change when later segments close
        total = _Tally(list(self.entries[c]), list(self.kept[c]), self.n_na[c], self.n_dropped[c])
        for t in open_tallies:
            total = total + t
        return total


def _window(r: range, sx: F64, srad: F64) -> _Window:
    """The kernel's window (samples finite in both channels), reading only ``r``."""
    ok = np.isfinite(sx[r.start : r.stop]) & np.isfinite(srad[r.start : r.stop])
    return _Window(r, np.arange(r.start, r.stop, dtype=np.intp)[ok])


class IncrementalControl:
    """The eight control columns, updated per frame at amortised O(1) work (module doc).

    The caller owns the arrays (the pipeline's track): ``compute`` reads views of the signals
    (NaN = missing) and the frame-key list, never copies them.
    """

    def __init__(self, fps: float) -> None:
        self.fps = check_fps(fps)
        self.reset()

    def reset(self) -> None:
        self._bounds: list[tuple[str, int]] = []  # (key, start frame) of each segment
        self._scanned = 0  # frame keys already split into segments
        self._final: dict[int, _Scored] = {}  # segment index -> its final contribution
        self._pools = {pool: _PoolState() for pool in _POOLS}
        self._reset_signals()

    def _reset_signals(self) -> None:
        self._valid = ValidPositions()
        self._p75 = {name: StreamingPercentile(LATENCY_REF_PCT) for name in ("sx", "srad")}

    def _take_signals(self, sx: F64, srad: F64) -> dict[str, float | None]:
        """Feed the samples that arrived since the last update; the per-channel v_ref."""
        if sx.shape[0] < self._valid.seen:  # a shorter prefix than before: start over
            self._reset_signals()
        new = self._valid.update(sx, srad)
        for name, ch in (("sx", sx), ("srad", srad)):
            self._p75[name].extend(np.abs(ch[new]))
        refs: dict[str, float | None] = {}
        for name, p75 in self._p75.items():
            value = p75.value()
            refs[name] = None if value is None else value + DIR_EPS  # as reference_speed
        return refs

    def _around(self, span: SegmentSpan, sx: F64, srad: F64) -> tuple[F64, F64]:
        """The new key's response and times at the valid samples around ``span``'s latency
        window, with one smoothing window of margin on each side (or up to the ends)."""
        valid = self._valid.view()
        k = _samples(LATENCY_SMOOTH_S, self.fps)
        first = math.floor(span.lo_s * self.fps) - 1
        last = math.ceil((span.lo_s + span.length_s) * self.fps) + 1
        a = int(np.searchsorted(valid, first, "left"))
        b = int(np.searchsorted(valid, last, "right"))
        idx = valid[max(0, a - k - 1) : min(valid.size, b + k + 1)]
        ch = sx if channel_of(span.key) == "sx" else srad
        v: F64 = expected_sign(span.key) * ch[idx]
        return v, idx / self.fps

    def invalidate(self, frame: int) -> None:
        """The key of an already scanned ``frame`` changed (a gap filled late): forget its
        segment and the one before (they may merge), and rescan from there."""
        if frame >= self._scanned:
            return
        j = bisect.bisect_right([start for _, start in self._bounds], frame) - 1
        keep = max(0, j - 1)
        self._scanned = self._bounds[keep][1] if self._bounds else 0
        del self._bounds[keep:]
        stale = [k for k in self._final if k >= keep]
        if stale:  # the pools cannot drop values: rebuild them (rare)
            for j in stale:
                del self._final[j]
            self._pools = {pool: _PoolState() for pool in _POOLS}
            for scored in self._final.values():
                self._pool_of(scored).add(scored)

    def _scan(self, frame_keys: Sequence[str]) -> None:
        for i in range(self._scanned, len(frame_keys)):
            if not self._bounds or self._bounds[-1][0] != frame_keys[i]:
                self._bounds.append((frame_keys[i], i))
        self._scanned = len(frame_keys)

    def _span(self, j: int, n_frames: int, n_signals: int) -> SegmentSpan:
        key, start = self._bounds[j]
        last = j == len(self._bounds) - 1
        end = n_frames if last else self._bounds[j + 1][1]
        return segment_span(j, key, start, end, last, n_signals, self.fps)

    def _score(
        self,
        span: SegmentSpan,
        previous_key: str | None,
        sx: F64,
        srad: F64,
        motion_type: MotionTypeOf,
        valid: NDArray[np.intp],
        v_refs: dict[str, float | None],
    ) -> _Scored:
        stable, full = _window(span.stable, sx, srad), _window(span.full, sx, srad)
        ep = _Episode(sx, srad, self.fps, [], {span.index: stable}, {span.index: full}, valid)
        cols = [_Column([], []), _Column([], []), _Column([], []), _Column([], [])]
        assert span.family is not None
        mt = motion_type(span) if span.family in ("lat", "yaw") else None
        _score_segment(ep, span, span.family, mt, cols[:3])
        if previous_key is not None:
            v_ref = v_refs[channel_of(span.key)]
            around = self._around(span, sx, srad)
            cols[3].add(*_latency_switch(ep, span, previous_key, v_ref, around))
        tallies = [_tally(c, _LATENCY_RANGE if k == 3 else None) for k, c in enumerate(cols)]
        return _Scored(span.family, tallies)

    def _pool_of(self, scored: _Scored) -> _PoolState:
        pool = next(p for p, (families, _) in _POOLS.items() if scored.family in families)
        return self._pools[pool]

    def compute(
        self,
        sx: F64,
        srad: F64,
        frame_keys: Sequence[str],
        motion_type: MotionTypeOf,
    ) -> dict[str, MetricResult]:
        """Provisional control columns over the signals and keys so far (``details
        ["provisional"]`` True). ``sx``/``srad`` hold one sample per signal index (at most
        ``len(frame_keys)``)."""
        n_signals, n_frames = int(sx.shape[0]), len(frame_keys)
        if n_signals > n_frames:
            raise ValueError(f"{n_signals} signal samples but only {n_frames} frame keys")
        self._scan(frame_keys)
        n_seg = len(self._bounds)
        # docs/methods.md#response-latency: latency's smoothing and per-channel v_ref run over every
        # valid sample so far
        v_refs = self._take_signals(sx, srad)
        valid = self._valid.view()
        # close what became final since the last update (once per segment)
        for j in range(len(self._final), n_seg - 1):
            span = self._span(j, n_frames, n_signals)
            if span.end > n_signals:
                break  # its last signals are still in flight
            if span.family is None:
                self._final[j] = _Scored(None, [])
                continue
            prev = self._bounds[j - 1][0] if j else None
            scored = self._score(span, prev, sx, srad, motion_type, valid, v_refs)
            self._final[j] = scored
            self._pool_of(scored).add(scored)
        open_spans = [self._span(j, n_frames, n_signals) for j in range(len(self._final), n_seg)]
        opened: list[_Scored] = []
        for span in open_spans:
            if span.family is None:
                continue
            prev = self._bounds[span.index - 1][0] if span.index else None
            opened.append(self._score(span, prev, sx, srad, motion_type, valid, v_refs))
        return self._columns(opened, n_seg)

    def _columns(self, opened: list[_Scored], n_seg: int) -> dict[str, MetricResult]:
        results: dict[str, MetricResult] = {}
        for pool, (families, label) in _POOLS.items():
            mine = [s for s in opened if s.family in families]
            state = self._pools[pool]
            cols = [state.with_open(c, [s.tallies[c] for s in mine]) for c in range(4)]
            results.update(_segment_results(pool, label, cols[:3], bool(cols[0].entries), True))
            results[f"response_latency_{pool}"] = _latency_result(
                cols[3], n_seg, bool(cols[3].entries), pool, label, True
            )
        return {name: results[name] for name in CONTROL_METRIC_NAMES}

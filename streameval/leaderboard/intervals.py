"""Each column's running interval over a case run: where the **full-set** value can still land
after each finished case (docs/methods.md#running-intervals-over-a-case-run).

A case run takes its selected cases in a seeded random order (``OUT/<model>/cases.json``). After
n of the N cases, each column has a value over the finished cases (computed exactly as the table
computes it: ``cells.model_cell``) and an anytime-valid interval on the value the column will
have once all N are in (``metrics.anytime``), valid at every n at once.

The estimand is the table's own formula, so each column is written as a ratio of per-case sums:

- pooled control columns: a case adds the sum of its scored segments' values ``A`` and their
  count ``B`` (``R = ΣA/ΣB``, the pooled mean; accuracy is ``100·max(0, R)``); ``B`` is at most
  the most keys a case holds, known before the run (``cases.json`` ``max_keys``);
- episode-mean columns (quality, revisit memory, WorldAtlas's): ``A`` the case's value, ``B`` 1
  when it is measured, 0 otherwise — a not_applicable (or missing) case adds nothing, and the
  mean is over the cases that are measured, as the table's;
- ``local_memory`` = 100·(1 − cut share)·(1 − mean mutation rate): the two ratios each at half
  the error rate (a union bound), combined at their worst and best corners;
- ``global_memory`` has no bounded per-case value (its geometry error has no upper limit): its
  interval is the column's range until the last case.

A column whose measured cases lack the details the pooled formula needs falls back to the mean
of the cases' values, as the table does (``metrics/aggregation.py``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from streameval.errors import BadInputError, UnknownMetricError
from streameval.inputs.numbers import finite_float
from streameval.leaderboard.cells import CellInterval, effective_result, model_cell
from streameval.leaderboard.columns import (
    metric_scale,
    metric_suites,
    table_columns,
)
from streameval.leaderboard.table import MasterTable, ModelRow
from streameval.metrics.aggregation import (
    Aggregator,
    global_memory,
    local_memory,
    pooled_segments,
    pooled_signed_segments,
    scene_task_score,
    scored_segment_values,
)
from streameval.metrics.anytime import (
    DEFAULT_CONFIDENCE,
    certain_ratio_range,
    ratio_confidence_sequence,
)
from streameval.metrics.registry import metric_spec
from streameval.replay.layout import CASE_RUN
from streameval.results.layout import path_component
from streameval.results.scores_file import SCORES_FILE, EpisodeRecord, load_episode

CASES_FILE = CASE_RUN
Kind = Literal["pooled", "pooled_signed", "mean", "local_memory", "unbounded"]


@dataclass(frozen=True, slots=True)
class ColumnInterval:
    """One column after ``cases`` of the ``of`` cases: its value over those cases (None when
    none measured it), and ``[low, high]``, the interval on the full-set value (equal to the
    value once every case is in). ``lows`` / ``highs`` are the interval after each case, in
    run order. ``kind`` says how the column was written as per-case sums (module docstring)."""

    column: str
    value: float | None
    low: float
    high: float
    cases: int
    of: int
    kind: Kind
    lows: tuple[float, ...] = ()
    highs: tuple[float, ...] = ()

    @property
    def width(self) -> float:
        return self.high - self.low

    def to_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "cases": self.cases,
            "of": self.of,
        }


@dataclass(frozen=True, slots=True)
class CaseRun:
    """What a case run's folder holds: the recorded order (case keys), how many cases were
    selected, the most keys of a case, and the finished cases' records in run order — the
    longest prefix of the order whose cases have all ended (a later case that finished first,
    on another server, waits for the ones before it: the order must stay the seeded one)."""

    model_dir: Path
    order: tuple[str, ...]
    population: int
    max_keys: int
    records: tuple[EpisodeRecord, ...]
    doc: Mapping[str, Any] = field(default_factory=dict)

    @property
    def finished(self) -> int:
        return len(self.records)

    @property
    def suites(self) -> tuple[str, ...]:
        return tuple(sorted({r.suite for r in self.records}))

    def by_case(self) -> dict[str, EpisodeRecord]:
        return dict(zip(self.order, self.records, strict=False))


def column_kind(name: str) -> Kind:
    """How column ``name`` is written as per-case sums (module docstring)."""
    try:
        aggregation = metric_spec(name).aggregation
    except UnknownMetricError:
        return "mean"
    return _KINDS.get(aggregation, "mean")


_KINDS: dict[Aggregator, Kind] = {
    pooled_signed_segments: "pooled_signed",
    pooled_segments: "pooled",
    local_memory: "local_memory",
    global_memory: "unbounded",
}


def _counts(record: EpisodeRecord, name: str) -> bool:
    suites = metric_suites(name)
    return not suites or record.suite in suites


def _measured(record: EpisodeRecord, name: str) -> Any:
    """The case's official result for ``name`` as the table counts it, else None."""
    if not _counts(record, name):
        return None
    result = effective_result(record, name)
    return result if result.status == "official" and result.normalized is not None else None


def _ratio_terms(
    records: Sequence[EpisodeRecord], name: str, kind: Kind, max_keys: int
) -> tuple[list[tuple[NDArray[np.float64], NDArray[np.float64]]], tuple[float, float], float]:
    """Per-case (A, B) arrays of column ``name`` (one pair; two for local_memory), the bounds
    of A/B and the most B a case can have."""
    scale = metric_scale(name)[0]
    results = [_measured(r, name) for r in records]
    if kind in ("pooled", "pooled_signed"):
        worst = -1.0 if kind == "pooled_signed" else 0.0
        segments = [None if m is None else scored_segment_values(m, worst) for m in results]
        if all(s is not None for m, s in zip(results, segments, strict=True) if m is not None):
            a = np.array([math.fsum(s) if s else 0.0 for s in segments])
            b = np.array([float(len(s)) if s else 0.0 for s in segments])
            return [(a, b)], (worst, 1.0), float(max(max_keys, int(b.max(initial=0))))
        # the table falls back to the episode mean: so does the interval
    if kind == "local_memory":
        cut_a, cut_b, rate_a, rate_b = [], [], [], []
        for m in results:
            cut = None if m is None else m.details.get("hard_cut")
            rate = None if m is None else finite_float(m.details.get("mutation_rate"))
            cut_a.append(float(bool(cut)) if m is not None else 0.0)
            cut_b.append(1.0 if m is not None else 0.0)
            rate_a.append(rate if rate is not None else 0.0)
            rate_b.append(1.0 if rate is not None else 0.0)
        pairs = [(np.array(cut_a), np.array(cut_b)), (np.array(rate_a), np.array(rate_b))]
        return pairs, (0.0, 1.0), 1.0
    if _is_task(name):  # WorldAtlas's task score: the task value, not the normalized one
        values = [None if m is None else finite_float(m.details.get("task_value")) for m in results]
        a = np.array([v if v is not None else 0.0 for v in values])
        b = np.array([1.0 if v is not None else 0.0 for v in values])
        return [(a, b)], (0.0, 1.0), 1.0
    a = np.array(
        [0.0 if m is None else min(max(float(m.normalized) / scale, 0.0), 1.0) for m in results]
    )
    b = np.array([0.0 if m is None else 1.0 for m in results])
    return [(a, b)], (0.0, 1.0), 1.0


def _is_task(name: str) -> bool:
    try:
        return metric_spec(name).aggregation is scene_task_score
    except UnknownMetricError:
        return False


def _to_column(kind: Kind, name: str, ratio: float) -> float:
    scale = metric_scale(name)[0]
    if kind == "pooled_signed":
        return scale * max(0.0, ratio)
    return scale * ratio


def column_intervals(
    records: Sequence[EpisodeRecord],
    population: int,
    *,
    columns: Sequence[str] | None = None,
    max_keys: int = 1,
    confidence: float = DEFAULT_CONFIDENCE,
    baseline: Mapping[str, EpisodeRecord] | None = None,
    case_keys: Sequence[str] = (),
) -> dict[str, ColumnInterval]:
    """Every column's running interval over ``records`` (the finished cases, in run order) of
    a run of ``population`` cases.

    ``columns``: column names (default: the table's columns of the records' suites);
    ``max_keys``: the most keys one case holds (a pooled column's most segments per case);
    ``baseline`` with ``case_keys`` (the key of each record, same order): a finished run's
    records by case key — the per-case sums are then paired with the baseline's on the same
    case (``ratio_confidence_sequence``'s control), which narrows the interval when the two
    runs move together; the interval is still on this run's full-set value.

    Pure: no I/O. Raises ``BadInputError`` for more records than ``population``.
    """
    if len(records) > population:
        raise BadInputError("intervals", f"{len(records)} cases is more than the {population}")
    if columns is None:
        columns = [c.name for c in table_columns({r.suite for r in records})]
    out: dict[str, ColumnInterval] = {}
    for name in columns:
        out[name] = _column_interval(
            records, population, name, max_keys, confidence, baseline, case_keys
        )
    return out


def _column_interval(
    records: Sequence[EpisodeRecord],
    population: int,
    name: str,
    max_keys: int,
    confidence: float,
    baseline: Mapping[str, EpisodeRecord] | None,
    case_keys: Sequence[str],
) -> ColumnInterval:
    kind = column_kind(name)
    scale = metric_scale(name)[0]
    n = len(records)
    cell = model_cell(list(records), name) if records else None
    value = None if cell is None else cell.value
    if kind == "unbounded" or n == 0:
        lows = np.zeros(n)
        highs = np.full(n, scale)
        if n and n == population:
            lows[-1] = highs[-1] = value if value is not None else math.nan
        return _interval(name, kind, value, lows, highs, n, population)
    pairs, bounds, top = _ratio_terms(records, name, kind, max_keys)
    controls = (
        _controls(name, kind, baseline, case_keys, len(pairs), max_keys) if baseline else None
    )
    share = 1.0 - (1.0 - confidence) / len(pairs)  # a union bound over the ratios
    ends: list[tuple[NDArray[np.float64], NDArray[np.float64]]] = []
    for i, (a, b) in enumerate(pairs):
        control, control_bounds = (None, (0.0, 0.0)) if controls is None else controls[i]
        sequence = ratio_confidence_sequence(
            a,
            b,
            population,
            bounds=bounds,
            max_denominator=top,
            confidence=share,
            control=control,
            control_bounds=control_bounds,
        )
        certain = certain_ratio_range(a, b, population, bounds=bounds, max_denominator=top)
        ends.append(_within(sequence, certain))
    if kind == "local_memory":
        (cut_lo, cut_hi), (rate_lo, rate_hi) = ends
        lows = scale * (1.0 - cut_hi) * (1.0 - rate_hi)
        highs = scale * (1.0 - cut_lo) * (1.0 - rate_lo)
        if n == population:
            lows[-1] = highs[-1] = value if value is not None else math.nan
    else:
        low, high = ends[0]
        lows = np.array([_to_column(kind, name, x) for x in low])
        highs = np.array([_to_column(kind, name, x) for x in high])
    return _interval(name, kind, value, lows, highs, n, population)


def _within(
    sequence: tuple[NDArray[np.float64], NDArray[np.float64]],
    certain: tuple[NDArray[np.float64], NDArray[np.float64]],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The sequence's interval intersected with the certain range (exact, where the sequence
    rounds out to its grid): coverage is the sequence's, the width never more. Where the two
    do not meet (the sequence has missed, probability at most α) the certain range stands."""
    low = np.fmax(sequence[0], certain[0])
    high = np.fmin(sequence[1], certain[1])
    apart = ~(low <= high)
    low[apart], high[apart] = certain[0][apart], certain[1][apart]
    return low, high


def _controls(
    name: str,
    kind: Kind,
    baseline: Mapping[str, EpisodeRecord],
    case_keys: Sequence[str],
    count: int,
    max_keys: int,
) -> list[tuple[NDArray[np.float64] | None, tuple[float, float]]] | None:
    """The baseline's per-case residuals ``A' − R'·B'`` on this run's cases (population mean
    exactly 0 over the baseline's full set), one per ratio; None when they cannot pair."""
    full = list(baseline.values())
    mine = [baseline.get(key) for key in case_keys]
    if any(r is None for r in mine) or not full:
        return None
    base_pairs, bounds, top = _ratio_terms(full, name, kind, max_keys)
    seen_pairs, _, _ = _ratio_terms([r for r in mine if r is not None], name, kind, max_keys)
    if len(base_pairs) != count:
        return None
    controls: list[tuple[NDArray[np.float64] | None, tuple[float, float]]] = []
    for (a_full, b_full), (a, b) in zip(base_pairs, seen_pairs, strict=True):
        total = math.fsum(b_full)
        if total <= 0:
            controls.append((None, (0.0, 0.0)))
            continue
        ratio = math.fsum(a_full) / total
        controls.append((a - ratio * b, ((bounds[0] - ratio) * top, (bounds[1] - ratio) * top)))
    return controls


def _interval(
    name: str,
    kind: Kind,
    value: float | None,
    lows: NDArray[np.float64],
    highs: NDArray[np.float64],
    n: int,
    population: int,
) -> ColumnInterval:
    scale = metric_scale(name)[0]
    low = float(lows[-1]) if n else 0.0
    high = float(highs[-1]) if n else scale
    if n == population and value is not None:
        low = high = value  # the last case: the table's own value, to the bit
    return ColumnInterval(
        name,
        value,
        low,
        high,
        n,
        population,
        kind,
        tuple(float(x) for x in lows),
        tuple(float(x) for x in highs),
    )


def case_folder(model_dir: Path, key: str) -> Path:
    """The results folder of case ``key`` (``set/name``) in ``model_dir``, as the run made it."""
    folder = model_dir
    for part in key.split("/"):
        if part.strip():
            folder = folder / path_component(part)
    return folder


def _load_checked(path: Path) -> EpisodeRecord | None:
    if not path.is_file():
        return None
    try:
        return load_episode(path)
    except BadInputError:
        return None


LoadCase = Callable[[Path], EpisodeRecord | None]
"""Reads one case's ``scores.json`` (None: not there, or not readable)."""


def read_case_run(model_dir: Path, load: LoadCase = _load_checked) -> CaseRun:
    """The case run in ``model_dir`` (``OUT/<model>/``, holding ``cases.json``): its order, size
    and finished cases. ``BadInputError`` when the folder is not a case run.

    ``load`` reads a case's ``scores.json``: by default with the published schema's check
    (``load_episode``); the dashboard, which reads a running case run every few seconds, passes
    its own cached reader of the same records (``results.scores_file.episode_from_document``)."""
    path = model_dir / CASES_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInputError(str(model_dir), f"not a case run (no {CASES_FILE})") from None
    except (OSError, ValueError) as exc:
        raise BadInputError(str(path), f"unreadable: {exc}") from None
    order = doc.get("order") if isinstance(doc, dict) else None
    if not isinstance(order, list) or not all(isinstance(k, str) for k in order):
        raise BadInputError(str(path), "has no case order")
    population = len(order)
    records: list[EpisodeRecord] = []
    for key in order:
        record = load(case_folder(model_dir, key) / SCORES_FILE)
        if record is None:
            break
        records.append(record)
    max_keys = recorded_max_keys(model_dir, doc)
    return CaseRun(model_dir, tuple(order), population, max_keys, tuple(records), doc)


def recorded_max_keys(model_dir: Path, doc: Mapping[str, Any]) -> int:
    """The most keys a case of the run in ``model_dir`` holds: its ``cases.json`` (``doc``)
    ``max_keys``, else the manifest's estimate."""
    max_keys = doc.get("max_keys")
    if isinstance(max_keys, int) and not isinstance(max_keys, bool) and max_keys >= 1:
        return max_keys
    return _manifest_max_keys(model_dir)


def _manifest_max_keys(model_dir: Path) -> int:
    """For a run recorded before ``cases.json`` kept ``max_keys``: the most segments its
    manifest says a case was asked for (an estimate: the unrun cases are not in it)."""
    most = 1
    try:
        lines = (model_dir / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        return most
    for line in lines:
        try:
            segments = json.loads(line).get("requested", {}).get("segments")
        except (ValueError, AttributeError):
            continue
        if isinstance(segments, int):
            most = max(most, segments)
    return most


def case_run_intervals(
    model_dir: Path,
    *,
    columns: Sequence[str] | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    baseline: CaseRun | None = None,
) -> dict[str, ColumnInterval]:
    """``column_intervals`` of the case run in ``model_dir`` (``read_case_run``), paired with
    ``baseline`` (a finished run over the same cases, ``read_case_run``) when given."""
    run = read_case_run(model_dir)
    return column_intervals(
        run.records,
        run.population,
        columns=columns,
        max_keys=run.max_keys,
        confidence=confidence,
        baseline=None if baseline is None else baseline.by_case(),
        case_keys=run.order[: run.finished],
    )


def find_case_runs(paths: Sequence[Path], depth: int = 2) -> dict[str, Path]:
    """``{model: OUT/<model>/}`` for every case run (a folder with ``cases.json``) at most
    ``depth`` levels below ``paths``; the model is the name ``cases.json`` records (the first
    found wins)."""
    found: dict[str, Path] = {}
    for root in paths:
        level = [root] if root.is_dir() else []
        for _ in range(depth + 1):
            following: list[Path] = []
            for folder in level:
                model = _case_run_model(folder / CASES_FILE)
                if model is not None:
                    found.setdefault(model, folder)
                    continue  # a case run's own folders hold cases, not runs
                following += sorted(p for p in folder.iterdir() if p.is_dir())
            level = following
    return found


def _case_run_model(path: Path) -> str | None:
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    model = doc.get("model") if isinstance(doc, dict) else None
    return model if isinstance(model, str) else None


def shared_ranks(intervals: Mapping[str, tuple[float, float]]) -> dict[str, tuple[int, int]]:
    """The ranks each model can still take, higher is better: ``(best, worst)`` from its
    interval ``(low, high)`` — best = 1 + the models whose low is above its high (surely
    better), worst = 1 + the models whose high is not below its low (perhaps better). A
    finished run's interval is its value, so without overlaps these are the plain ranks (ties
    share the worse one)."""
    ranks: dict[str, tuple[int, int]] = {}
    for model, (low, high) in intervals.items():
        better = sum(1 for m, (lo, _) in intervals.items() if m != model and lo > high)
        maybe = sum(1 for m, (_, hi) in intervals.items() if m != model and hi >= low)
        ranks[model] = (1 + better, 1 + maybe)
    return ranks


def with_intervals(
    table: MasterTable, runs: Mapping[str, Path], confidence: float = DEFAULT_CONFIDENCE
) -> MasterTable:
    """``table`` with each case run's interval in its model's cells (``Cell.interval``) and
    every included model's possible ranks per column (``shared_ranks``; a model without a
    case run counts as its value). ``runs``: ``find_case_runs``."""
    found: dict[str, dict[str, ColumnInterval]] = {}
    names = [c.name for c in table.columns]
    for model, folder in runs.items():
        try:
            found[model] = case_run_intervals(folder, columns=names, confidence=confidence)
        except BadInputError:
            continue
    ranked: dict[str, dict[str, tuple[int, int]]] = {}
    for name in names:
        spans: dict[str, tuple[float, float]] = {}
        for row in table.rows:
            cell = row.cells[name]
            if cell.value is None:
                continue
            interval = found.get(row.model, {}).get(name)
            if interval is not None and interval.value is not None:
                spans[row.model] = (interval.low, interval.high)
            else:
                spans[row.model] = (cell.value, cell.value)
        if len(spans) >= 2:
            ranked[name] = shared_ranks(spans)

    def row_with(row: ModelRow) -> ModelRow:
        cells = dict(row.cells)
        for name, cell in row.cells.items():
            interval = found.get(row.model, {}).get(name)
            if interval is None or cell.value is None or interval.value is None:
                continue
            best, worst = ranked.get(name, {}).get(row.model, (None, None))
            cells[name] = replace(
                cell,
                interval=CellInterval(
                    interval.low, interval.high, interval.cases, interval.of, best, worst
                ),
            )
        return replace(row, cells=cells)

    return replace(
        table,
        rows=tuple(row_with(r) for r in table.rows),
        excluded=tuple(replace(e, row=row_with(e.row)) for e in table.excluded),
    )

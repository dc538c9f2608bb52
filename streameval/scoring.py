"""The master table of seed 000: per-model aggregation of episode scores, shared by the
``streameval table`` command, the dashboard and the HTML report.

Pure logic, no printing: read ``scores.json`` files (DESIGN §5), aggregate every master-table
column per model with the seed-000 formulas, attach statuses, coverage and bounds (SPEC §8,
seed 003), apply the published exclusion rule, and rank each column for colouring.

Decisions this module makes, so that every view shows the same numbers:

Aggregation (seed 000 "Final reporting", SPEC §4–§6), one function per column in
``AGGREGATORS`` (column name → function; a column without an entry uses the episode mean):

- control columns pool the *scored segments of all the model's episodes* (read from
  ``details["segments"]``): accuracy ``100·max(0, mean)``, purity / stability / latency
  ``100·mean``. If any measured episode lacks usable segment details the whole column falls back
  to the mean of the episodes' ``normalized`` values (``Cell.method`` says which was used): mixing
  the two weightings in one number would weight episodes inconsistently.
- ``local_memory`` = ``100·(1 − share of episodes with a cut)·(1 − mean mutation rate)``;
  ``revisit_memory`` = ``100/(1 + mean(pooled pair distances)/TAU_C)``;
  ``global_memory`` = ``100/(1 + mean(e)/TAU_G)``; quality columns = mean of episode values.
  The memory columns fall back to the episode mean in the same way as the control columns.

Statuses (SPEC §8): per column and model, an episode is *measured* (official with a finite
value), *not_applicable* or *missing* (status missing, metric absent from its scores.json, an
official value that is not finite, or — unless ``include_incomplete`` — an episode whose run did
not complete). not_applicable and missing episodes are never imputed and never averaged in.
``coverage`` = measured / all episodes of the model, shown as ``k/N`` when k < N; N counts the
model's scores.json files found (an episode whose file was never written cannot be seen, and two
files for the same episode are an input error, not two episodes). The cell is:

- ``official`` — at least one measured episode and none missing. not_applicable episodes do not
  make a cell partial: they lie outside the metric's domain (a ``W``-only episode has no rot
  segment), so a rot cell can be official at 7/15;
- ``partial`` — measured episodes and missing ones; the value is the aggregate over the measured
  episodes (seed 003: the measured denominator is shown, the full-suite score stays unknown) and
  the bounds say where it would lie whatever the missing episodes had scored;
- ``not_applicable`` / ``missing`` — nothing measured; missing if any episode is missing, else
  not_applicable, with the episodes' reasons, deduplicated.

Bounds (seed 003, only for partial cells): let M be the measured episodes, X the missing ones,
N' = |M| + |X| (not_applicable episodes are left out — they are never imputed). Each bound is the
column's own formula evaluated with every missing episode at its worst / best possible value:

- episode-mean columns: exactly seed 003, ``[Σv/N', (Σv + 100·|X|)/N']``;
- pooled control columns: each missing episode is assumed to carry as many scored segments as a
  measured episode does on average (``S/|M|``), scoring 0 / 1 (accuracy −1 / 1, then
  ``max(0, ·)``); for purity, stability and latency this reduces to the seed 003 formula applied to
  the column value;
- ``local_memory``: missing episodes with a cut and mutation rate 1 / without a cut and rate 0
  (the mean mutation rate skips ``None`` — a cut that left no countable pair — as
  ``memory_local.local_memory_model`` does);
- ``revisit_memory``: the average pair count per measured episode, at distance ``REVISIT_D_MAX``
  (2 = the largest ``1 − cos``) / 0;
- ``global_memory``: lower bound 0 (``e`` has no upper limit), upper with ``e = 0``.

Colour (seed 000: green = column best, yellow = second, red = worst): ranks are taken on values
rounded to two decimals, exactly as displayed (90.004 and 90.001 tie). Only ``official`` cells of
included models are ranked — a partial value covers a different set of episodes, so it is shown
uncoloured (seed 004: only results with the same coverage are directly comparable). Ranking
needs at least ``MIN_MODELS_TO_RANK`` (3) ranked values and at least two distinct values: with
one or two models "best" and "worst" would only restate the numbers. Dense ranking on distinct
rounded values: every cell equal to the top value is best, every cell equal to the lowest value
is worst, every cell equal to the second distinct value is second — unless that is also the
lowest (two distinct values), in which case worst wins.

Exclusion (seed 000: "by default Open-Oasis (uniformly failing) and Genie3 (only 5 videos) are
excluded"), see ``ExclusionRule``: models named by the caller, models with fewer than
``min_episodes`` episodes (default 10), and models that fail uniformly — at least one official
direction-accuracy episode result (trans or rot) and every such result ≤ ``failure_max`` (default
1.00 on the 0–100 scale: under 1 % of the motion in the commanded direction in every episode).
Excluded models are returned with their reasons, never silently dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from streameval.constants import TAU_C, TAU_G
from streameval.errors import BadInputError
from streameval.metrics.control import CONTROL_METRIC_NAMES, PERCENT
from streameval.results import MetricResult
from streameval.scores_file import (
    EpisodeRecord,
    LoadedResults,
    find_scores_files,
    finite_float,
    load_episode,
    load_results,
)
from streameval.worldatlas_columns import (
    MEMORY_LOOP_SUITE,
    WORLDATLAS_COLUMN_SPECS,
    task_score_bounds,
    task_values,
)

__all__ = ["EpisodeRecord", "LoadedResults", "find_scores_files", "load_episode", "load_results"]

# Not in constants.py (reported to the lead):
REVISIT_D_MAX = 2.0  # 1 − cos of L2-normalised features lies in [0, 2] (bounds only)

DEFAULT_MIN_EPISODES = 10  # seed 000 excluded Genie3 with 5 videos; full-suite models have more
UNIFORM_FAILURE_MAX = 1.0  # direction accuracy (0–100) at or below this in every episode = fails
MIN_MODELS_TO_RANK = 3  # green / yellow / red need three values to mean anything

ColumnGroup = Literal["control", "memory", "quality"]
CellStatus = Literal["official", "partial", "not_applicable", "missing"]
Rank = Literal["best", "second", "worst"]
# The seed's colours for each rank, for the views that draw them.
RANK_COLOURS: dict[Rank, str] = {"best": "green", "second": "yellow", "worst": "red"}

_STATUSES = ("official", "not_applicable", "missing")
_ACCURACY_COLUMNS = ("direction_accuracy_trans", "direction_accuracy_rot")


# --------------------------------------------------------------------------------------------
# Columns
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Column:
    """One master-table column: metric name (DESIGN §5), display label and a short header.

    Every column is higher-is-better in [0, 100] (seed 000 "Final reporting").
    """

    name: str
    label: str
    short: str
    group: ColumnGroup


COLUMNS: tuple[Column, ...] = (
    Column("direction_accuracy_trans", "Direction Accuracy (trans)", "Acc T", "control"),
    Column("direction_accuracy_rot", "Direction Accuracy (rot)", "Acc R", "control"),
    Column("direction_purity_trans", "Direction Purity (trans)", "Pur T", "control"),
    Column("direction_purity_rot", "Direction Purity (rot)", "Pur R", "control"),
    Column("motion_stability_trans", "Motion Stability (trans)", "Stab T", "control"),
    Column("motion_stability_rot", "Motion Stability (rot)", "Stab R", "control"),
    Column("response_latency_trans", "Response Latency (trans)", "Lat T", "control"),
    Column("response_latency_rot", "Response Latency (rot)", "Lat R", "control"),
    Column("local_memory", "Local Memory", "Local", "memory"),
    Column("revisit_memory", "Revisit Memory", "Revisit", "memory"),
    Column("global_memory", "Global Memory", "Global", "memory"),
    Column("perceptual_quality", "Perceptual Quality", "Percep", "quality"),
    Column("aesthetic_quality", "Aesthetic Quality", "Aesth", "quality"),
)
COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
# Seeds 001–004 (memory_loop suite): appended when the results hold memory_loop episodes.
WORLDATLAS_COLUMNS: tuple[Column, ...] = tuple(
    Column(name, label, short, "memory") for name, label, short in WORLDATLAS_COLUMN_SPECS
)


def column_by_name(name: str, columns: Sequence[Column] = COLUMNS) -> Column:
    """The column called ``name``; a ``KeyError`` listing the known names otherwise."""
    for column in columns:
        if column.name == name:
            return column
    raise KeyError(f"unknown column {name!r}; known: {', '.join(c.name for c in columns)}")


# --------------------------------------------------------------------------------------------
# Cells and aggregation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cell:
    """One model (or episode) × column: value, status, coverage, bounds, rank.

    ``value`` is None unless at least one episode was measured. ``lower``/``upper`` are set only
    for partial cells (see the module docstring). ``reasons`` are the non-official episodes'
    reasons, deduplicated, missing ones first. ``method`` names the aggregation used
    (``pooled_segments``, ``episode_mean``, ``episode_mean_fallback``, ...). ``rank`` is set by
    the table for official cells of included models.
    """

    value: float | None
    status: CellStatus
    measured: int
    total: int
    n_missing: int = 0
    n_not_applicable: int = 0
    lower: float | None = None
    upper: float | None = None
    reasons: tuple[str, ...] = ()
    method: str | None = None
    n_units: int | None = None
    rank: Rank | None = None

    @property
    def coverage(self) -> float:
        """Measured episodes / all episodes of the model (0 for an empty model)."""
        return self.measured / self.total if self.total else 0.0

    @property
    def display_value(self) -> float | None:
        """The value as displayed (two decimals): what ranking compares."""
        return None if self.value is None else round_display(self.value)

    def to_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "status": self.status,
            "measured": self.measured,
            "total": self.total,
            "n_missing": self.n_missing,
            "n_not_applicable": self.n_not_applicable,
            "lower": self.lower,
            "upper": self.upper,
            "reasons": list(self.reasons),
            "method": self.method,
            "n_units": self.n_units,
            "rank": self.rank,
        }


@dataclass(frozen=True, slots=True)
class Aggregate:
    """What an aggregator returns: the column value over the measured episodes and its bounds
    with ``n_missing`` episodes at their worst / best (equal to ``value`` when none is missing).
    ``n_units`` counts what was pooled (segments, pairs or episodes).
    """

    value: float
    lower: float
    upper: float
    method: str
    n_units: int


# measured: the official results of the model's episodes (finite normalized), never empty.
Aggregator = Callable[[Sequence[MetricResult], int], Aggregate]


def episode_mean(measured: Sequence[MetricResult], n_missing: int) -> Aggregate:
    """Mean of the episodes' normalized values; bounds exactly as seed 003."""
    values = [float(m.normalized) for m in measured if m.normalized is not None]
    total = math.fsum(values)
    n_all = len(values) + n_missing
    return Aggregate(
        total / len(values),
        total / n_all,
        (total + PERCENT * n_missing) / n_all,
        "episode_mean",
        len(values),
    )


def _fallback(measured: Sequence[MetricResult], n_missing: int) -> Aggregate:
    return replace(episode_mean(measured, n_missing), method="episode_mean_fallback")


def _scored_segment_values(result: MetricResult) -> list[float] | None:
    """The values of the scored segments in ``details["segments"]``; None when unusable.

    Unusable = no segment list, an entry that is not an object, a scored entry without a finite
    value, or no scored entry at all (an official episode always has one).
    """
    segments = result.details.get("segments")
    if not isinstance(segments, list):
        return None
    values: list[float] = []
    for entry in segments:
        if not isinstance(entry, dict):
            return None
        if entry.get("status") != "scored":
            continue  # not_applicable and dropped segments are never averaged in (SPEC §4, §8)
        value = finite_float(entry.get("value"))
        if value is None:
            return None
        values.append(value)
    return values or None


def _pooled_segments(signed: bool) -> Aggregator:
    """Pool the scored segments of all episodes (seed 000: "pool of W/S/A/D segments").

    ``signed``: segment values lie in [−1, 1] and the column is ``100·max(0, mean)``
    (direction accuracy); otherwise they lie in [0, 1] and the column is ``100·mean``.
    """
    worst = -1.0 if signed else 0.0

    def column(raw_mean: float) -> float:
        return PERCENT * max(0.0, raw_mean) if signed else PERCENT * raw_mean

    def aggregate(measured: Sequence[MetricResult], n_missing: int) -> Aggregate:
        per_episode = [_scored_segment_values(m) for m in measured]
        pooled: list[float] = []
        for values in per_episode:
            if values is None:
                return _fallback(measured, n_missing)
            pooled.extend(values)
        total, n = math.fsum(pooled), len(pooled)
        unknown = n_missing * n / len(measured)  # segments assumed for the missing episodes
        return Aggregate(
            column(total / n),
            column((total + worst * unknown) / (n + unknown)),
            column((total + unknown) / (n + unknown)),
            "pooled_segments",
            n,
        )

    return aggregate


def _local_memory(measured: Sequence[MetricResult], n_missing: int) -> Aggregate:
    """``100·(1 − share of episodes with a cut)·(1 − mean mutation rate)`` (SPEC §5).

    As ``memory_local.local_memory_model``: the mean mutation rate skips ``None`` (an episode
    whose hard cut left no countable pair) and is 0 when no episode has a rate.
    """
    cuts: list[float] = []
    rates: list[float] = []
    for m in measured:
        cut, rate = m.details.get("hard_cut"), m.details.get("mutation_rate")
        finite_rate = finite_float(rate)
        if (
            cut not in (True, False, 0, 1)
            or "mutation_rate" not in m.details
            or (rate is not None and finite_rate is None)
        ):
            return _fallback(measured, n_missing)
        cuts.append(float(bool(cut)))
        if finite_rate is not None:
            rates.append(finite_rate)
    n, n_rates = len(measured), len(rates)
    n_all = n + n_missing
    c, r = math.fsum(cuts), math.fsum(rates)

    def formula(cut_share: float, rate_sum: float, rate_count: int) -> float:
        mean_rate = rate_sum / rate_count if rate_count else 0.0
        return PERCENT * (1.0 - cut_share) * (1.0 - mean_rate)

    return Aggregate(
        formula(c / n, r, n_rates),
        # worst: every missing episode has a cut and mutation rate 1; best: neither.
        formula((c + n_missing) / n_all, r + n_missing, n_rates + n_missing),
        formula(c / n_all, r, n_rates + n_missing),
        "episode_cut_share_and_mean_mutation_rate",
        n,
    )


def _revisit_memory(measured: Sequence[MetricResult], n_missing: int) -> Aggregate:
    """``100/(1 + mean(d)/TAU_C)`` over the revisit pairs of all episodes (seed 000)."""
    pooled: list[float] = []
    for m in measured:
        distances = m.details.get("pair_distances")
        if not isinstance(distances, list):
            return _fallback(measured, n_missing)
        values = [finite_float(d) for d in distances]
        if any(d is None for d in values):
            return _fallback(measured, n_missing)
        pooled.extend(d for d in values if d is not None)
    if not pooled:  # official episodes always have pairs; a file without any is inconsistent
        return _fallback(measured, n_missing)
    total, n = math.fsum(pooled), len(pooled)
    unknown = n_missing * n / len(measured)  # pairs assumed for the missing episodes

    def formula(mean_distance: float) -> float:
        return PERCENT / (1.0 + mean_distance / TAU_C)

    return Aggregate(
        formula(total / n),
        formula((total + REVISIT_D_MAX * unknown) / (n + unknown)),
        formula(total / (n + unknown)),
        "pooled_pairs",
        n,
    )


def _global_memory(measured: Sequence[MetricResult], n_missing: int) -> Aggregate:
    """``100/(1 + mean(e)/TAU_G)`` over the episodes' geometry errors (seed 000, SPEC §5)."""
    errors: list[float] = []
    for m in measured:
        e = finite_float(m.details.get("e"))
        if e is None:
            return _fallback(measured, n_missing)
        errors.append(e)
    total, n = math.fsum(errors), len(errors)

    def formula(mean_e: float) -> float:
        return PERCENT / (1.0 + mean_e / TAU_G)

    value = formula(total / n)
    # e has no upper limit: with a missing episode the column can get arbitrarily close to 0.
    lower = 0.0 if n_missing else value
    return Aggregate(value, lower, formula(total / (n + n_missing)), "mean_e", n)


# Column → aggregator. New metrics plug in here; columns without an entry use ``episode_mean``.
def _scene_task_score(measured: Sequence[MetricResult], n_missing: int) -> Aggregate:
    values = task_values(measured)
    if not values:
        return episode_mean(measured, n_missing)
    mean, lower, upper = task_score_bounds(values, n_missing)
    return Aggregate(mean, lower, upper, "task_score", len(values))


AGGREGATORS: dict[str, Aggregator] = {
    "memory_scene_f1": _scene_task_score,
    **{
        name: _pooled_segments(signed=name.startswith("direction_accuracy"))
        for name in CONTROL_METRIC_NAMES
    },
    "local_memory": _local_memory,
    "revisit_memory": _revisit_memory,
    "global_memory": _global_memory,
    "perceptual_quality": episode_mean,
    "aesthetic_quality": episode_mean,
}


def effective_result(
    record: EpisodeRecord, name: str, include_incomplete: bool = False
) -> MetricResult:
    """The episode's result for column ``name`` as the table counts it.

    Absent metrics and (unless ``include_incomplete``) every metric of an incomplete run are
    missing: an incomplete run is not the episode the suite asked for.
    """
    if not record.complete and not include_incomplete:
        return MetricResult.missing("episode incomplete")
    result = record.metrics.get(name)
    if result is None:
        return MetricResult.missing(f"{name} not in scores.json")
    return result


def episode_cell(record: EpisodeRecord, name: str, include_incomplete: bool = False) -> Cell:
    """One episode × column, for drill-down: the episode's normalized value and status."""
    result = effective_result(record, name, include_incomplete)
    if result.status == "official":
        return Cell(result.normalized, "official", 1, 1, method="episode")
    reasons = (result.reason,) if result.reason else ()
    if result.status == "not_applicable":
        return Cell(None, "not_applicable", 0, 1, n_not_applicable=1, reasons=reasons)
    return Cell(None, "missing", 0, 1, n_missing=1, reasons=reasons)


def model_cell(
    episodes: Sequence[EpisodeRecord],
    name: str,
    aggregator: Aggregator | None = None,
    include_incomplete: bool = False,
) -> Cell:
    """One model × column from the model's episodes (statuses and bounds: module docstring)."""
    aggregate_fn = aggregator or AGGREGATORS.get(name, episode_mean)
    measured: list[MetricResult] = []
    missing_reasons: list[str] = []
    na_reasons: list[str] = []
    for record in episodes:
        result = effective_result(record, name, include_incomplete)
        if result.status == "official":
            measured.append(result)
        elif result.status == "not_applicable":
            na_reasons.append(result.reason or "not applicable")
        else:
            missing_reasons.append(result.reason or "missing")
    total, n_missing, n_na = len(episodes), len(missing_reasons), len(na_reasons)
    reasons = tuple(dict.fromkeys(missing_reasons + na_reasons))
    if not measured:
        status: CellStatus = "missing" if n_missing else "not_applicable"
        return Cell(None, status, 0, total, n_missing, n_na, reasons=reasons)
    agg = aggregate_fn(measured, n_missing)
    partial = n_missing > 0
    return Cell(
        agg.value,
        "partial" if partial else "official",
        len(measured),
        total,
        n_missing,
        n_na,
        lower=agg.lower if partial else None,
        upper=agg.upper if partial else None,
        reasons=reasons,
        method=agg.method,
        n_units=agg.n_units,
    )


# --------------------------------------------------------------------------------------------
# Rows, exclusion, ranking
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelRow:
    """One model: its episodes (sorted by path) and one cell per column."""

    model: str
    episodes: tuple[EpisodeRecord, ...]
    cells: Mapping[str, Cell]

    @property
    def n_episodes(self) -> int:
        return len(self.episodes)

    @property
    def suites(self) -> tuple[str, ...]:
        return tuple(sorted({e.suite for e in self.episodes}))


@dataclass(frozen=True, slots=True)
class ExclusionRule:
    """The published default exclusion rule (seed 000), configurable.

    ``min_episodes``: fewer episodes than this → excluded (Genie3 had 5 videos).
    ``failure_max``: a model whose every official direction-accuracy episode result (trans and
    rot, at least one) is ≤ this (0–100) fails uniformly → excluded (Open-Oasis); None disables.
    ``enabled=False`` (``--include-all``) turns the default rule off; models excluded by name
    stay excluded, because the caller asked for that explicitly.
    """

    min_episodes: int = DEFAULT_MIN_EPISODES
    failure_max: float | None = UNIFORM_FAILURE_MAX
    enabled: bool = True


INCLUDE_ALL = ExclusionRule(enabled=False)


@dataclass(frozen=True, slots=True)
class Exclusion:
    """A model left out of the ranked table, why, and its row (for views that show it greyed)."""

    model: str
    reasons: tuple[str, ...]
    row: ModelRow


def fails_uniformly(
    episodes: Sequence[EpisodeRecord],
    failure_max: float = UNIFORM_FAILURE_MAX,
    include_incomplete: bool = False,
) -> bool:
    """True when the model never moved the commanded way: see ``ExclusionRule.failure_max``.

    A model without any official direction-accuracy result is not "failing" — it is unmeasured
    and shows n/a or missing instead.
    """
    values = [
        result.normalized
        for record in episodes
        for name in _ACCURACY_COLUMNS
        if (result := effective_result(record, name, include_incomplete)).status == "official"
        and result.normalized is not None
    ]
    return bool(values) and all(v <= failure_max for v in values)


def exclusion_reasons(
    row: ModelRow,
    exclude: Iterable[str] = (),
    rule: ExclusionRule | None = None,
    include_incomplete: bool = False,
) -> tuple[str, ...]:
    """Why ``row`` is left out of the table (empty: it is included). ``rule`` None = default."""
    rule = rule or ExclusionRule()
    reasons: list[str] = []
    if row.model in set(exclude):
        reasons.append("excluded on request")
    if rule.enabled:
        if row.n_episodes < rule.min_episodes:
            reasons.append(
                f"only {row.n_episodes} episode{'s' if row.n_episodes != 1 else ''} "
                f"(fewer than {rule.min_episodes})"
            )
        if rule.failure_max is not None and fails_uniformly(
            row.episodes, rule.failure_max, include_incomplete
        ):
            reasons.append(
                "fails uniformly (direction accuracy ≤ "
                f"{format_value(rule.failure_max)} in every episode)"
            )
    return tuple(reasons)


def round_display(value: float) -> float:
    """The value exactly as displayed with two decimals (``-0.00`` shown as ``0.00``)."""
    return float(f"{value:.2f}") + 0.0


def rank_values(values: Mapping[str, float | None]) -> dict[str, Rank]:
    """Best / second / worst per key, on two-decimal values; rules in the module docstring."""
    rounded = {k: round_display(v) for k, v in values.items() if v is not None}
    distinct = sorted(set(rounded.values()), reverse=True)
    if len(rounded) < MIN_MODELS_TO_RANK or len(distinct) < 2:
        return {}
    best, worst = distinct[0], distinct[-1]
    second = distinct[1] if len(distinct) > 2 else None
    ranks: dict[str, Rank] = {}
    for key, v in rounded.items():
        if v == best:
            ranks[key] = "best"
        elif v == worst:
            ranks[key] = "worst"
        elif v == second:
            ranks[key] = "second"
    return ranks


def rank_rows(rows: Sequence[ModelRow], columns: Sequence[Column] = COLUMNS) -> list[ModelRow]:
    """``rows`` with ``Cell.rank`` set in every column; only official cells are ranked."""
    ranks = {
        c.name: rank_values(
            {r.model: r.cells[c.name].value for r in rows if r.cells[c.name].status == "official"}
        )
        for c in columns
    }
    return [
        replace(
            row,
            cells={
                name: replace(cell, rank=ranks.get(name, {}).get(row.model))
                for name, cell in row.cells.items()
            },
        )
        for row in rows
    ]


def sort_rows(
    rows: Sequence[ModelRow], column: str | None = None, descending: bool = True
) -> list[ModelRow]:
    """Rows by ``column`` (displayed value, best first when ``descending``; no value last,
    ties by model name), or alphabetically by model name when ``column`` is None or
    ``"model"``."""
    by_name = sorted(rows, key=lambda r: (r.model.casefold(), r.model))
    if column is None or column == "model":
        return by_name
    sign = -1.0 if descending else 1.0

    def key(row: ModelRow) -> tuple[bool, float]:
        shown = row.cells[column].display_value if column in row.cells else None
        return (shown is None, 0.0 if shown is None else sign * shown)

    return sorted(by_name, key=key)  # stable: ties keep the name order


@dataclass(frozen=True, slots=True)
class MasterTable:
    """The master table: included rows (ranked, sorted), exclusions, read errors and notes."""

    columns: tuple[Column, ...]
    rows: tuple[ModelRow, ...]
    excluded: tuple[Exclusion, ...]
    errors: tuple[BadInputError, ...] = ()
    notes: tuple[str, ...] = ()
    include_incomplete: bool = False

    def row(self, model: str) -> ModelRow:
        """The row of ``model``, included or excluded."""
        for row in (*self.rows, *(e.row for e in self.excluded)):
            if row.model == model:
                return row
        raise KeyError(f"no model {model!r} in the table")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready view for the report and the dashboard."""

        def row_json(row: ModelRow) -> dict[str, Any]:
            return {
                "model": row.model,
                "episodes": row.n_episodes,
                "suites": list(row.suites),
                "cells": {name: cell.to_json() for name, cell in row.cells.items()},
            }

        return {
            "columns": [
                {"name": c.name, "label": c.label, "short": c.short, "group": c.group}
                for c in self.columns
            ],
            "rows": [row_json(r) for r in self.rows],
            "excluded": [
                {"model": e.model, "reasons": list(e.reasons), "row": row_json(e.row)}
                for e in self.excluded
            ],
            "errors": [str(e) for e in self.errors],
            "notes": list(self.notes),
        }


def model_row(
    model: str,
    episodes: Sequence[EpisodeRecord],
    columns: Sequence[Column] = COLUMNS,
    include_incomplete: bool = False,
) -> ModelRow:
    """Aggregate one model's episodes into a row (unranked)."""
    ordered = tuple(sorted(episodes, key=lambda e: str(e.path)))
    cells = {c.name: model_cell(ordered, c.name, None, include_incomplete) for c in columns}
    return ModelRow(model, ordered, cells)


def build_table(
    episodes: Iterable[EpisodeRecord],
    *,
    exclude: Iterable[str] = (),
    rule: ExclusionRule | None = None,
    sort_by: str | None = None,
    descending: bool = True,
    columns: Sequence[Column] | None = None,
    errors: Sequence[BadInputError] = (),
    include_incomplete: bool = False,
) -> MasterTable:
    """The master table over ``episodes``: one row per model, exclusions applied, ranked.

    Ranking is over the included models only. ``rule`` None = the published default rule.
    ``sort_by`` is a column name or ``"model"`` (default: model name).
    """
    episodes = list(episodes)
    if columns is None:
        loops = any(e.suite == MEMORY_LOOP_SUITE for e in episodes)
        columns = COLUMNS + WORLDATLAS_COLUMNS if loops else COLUMNS
    if sort_by not in (None, "model"):
        column_by_name(sort_by, columns)  # KeyError with the known names
    by_model: dict[str, list[EpisodeRecord]] = {}
    for record in episodes:
        by_model.setdefault(record.model, []).append(record)
    excluded_names = set(exclude)
    included: list[ModelRow] = []
    excluded: list[Exclusion] = []
    for model in sorted(by_model, key=lambda m: (m.casefold(), m)):
        row = model_row(model, by_model[model], columns, include_incomplete)
        reasons = exclusion_reasons(row, excluded_names, rule, include_incomplete)
        if reasons:
            excluded.append(Exclusion(model, reasons, row))
        else:
            included.append(row)
    notes: list[str] = []
    unknown = sorted(excluded_names - set(by_model))
    if unknown:
        notes.append(f"asked to exclude unknown model(s): {', '.join(unknown)}")
    suites = sorted({e.suite for row in included for e in row.episodes})
    if len(suites) > 1:
        notes.append(f"results mix suites ({', '.join(suites)}); columns pool across them")
    ranked = rank_rows(included, columns)
    return MasterTable(
        tuple(columns),
        tuple(sort_rows(ranked, sort_by, descending)),
        tuple(excluded),
        tuple(errors),
        tuple(notes),
        include_incomplete,
    )


def tabulate(paths: Iterable[Path], **options: Any) -> MasterTable:
    """Load every scores.json below ``paths`` and build the table (``options``: ``build_table``).

    Bad files end up in ``MasterTable.errors``; the others are still tabulated.
    """
    loaded = load_results(paths)
    return build_table(loaded.episodes, errors=loaded.errors, **options)


# --------------------------------------------------------------------------------------------
# Drill-down
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EpisodeRow:
    """One episode of a model with its per-episode cells (normalized values, statuses)."""

    record: EpisodeRecord
    cells: Mapping[str, Cell]


def model_episodes(table: MasterTable, model: str) -> list[EpisodeRow]:
    """Drill-down model → episodes, for included and excluded models alike."""
    row = table.row(model)
    return [
        EpisodeRow(
            record,
            {c.name: episode_cell(record, c.name, table.include_incomplete) for c in table.columns},
        )
        for record in row.episodes
    ]


@dataclass(frozen=True, slots=True)
class SegmentRow:
    """One segment (or key switch, for latency) of a control column in one episode.

    ``value`` is the segment's own score: accuracy in [−1, 1], the others in [0, 1]; None unless
    ``status`` is ``scored``. ``details`` holds the rest of the entry (kernel internals).
    """

    column: str
    index: int | None
    key: str | None
    family: str | None
    start_frame: int | None
    end_frame: int | None
    status: str
    value: float | None
    reason: str | None
    details: Mapping[str, Any] = field(default_factory=dict)


_SEGMENT_FIELDS = frozenset(
    {"index", "key", "family", "start_frame", "end_frame", "status", "value", "reason"}
)


def _optional_int(x: object) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _optional_str(x: object) -> str | None:
    return x if isinstance(x, str) else None


def episode_segments(record: EpisodeRecord, column: str | None = None) -> list[SegmentRow]:
    """Drill-down episode → segments, from the control metrics' ``details["segments"]``.

    ``column`` None = every control column in table order. Columns without segment details
    (non-control metrics, older files) contribute nothing.
    """
    names = CONTROL_METRIC_NAMES if column is None else (column,)
    rows: list[SegmentRow] = []
    for name in names:
        result = record.metrics.get(name)
        segments = result.details.get("segments") if result is not None else None
        if not isinstance(segments, list):
            continue
        for entry in segments:
            if not isinstance(entry, dict):
                continue
            rows.append(
                SegmentRow(
                    column=name,
                    index=_optional_int(entry.get("index")),
                    key=_optional_str(entry.get("key")),
                    family=_optional_str(entry.get("family")),
                    start_frame=_optional_int(entry.get("start_frame")),
                    end_frame=_optional_int(entry.get("end_frame")),
                    status=str(entry.get("status", "unknown")),
                    value=finite_float(entry.get("value")),
                    reason=_optional_str(entry.get("reason")),
                    details={k: v for k, v in entry.items() if k not in _SEGMENT_FIELDS},
                )
            )
    return rows


# --------------------------------------------------------------------------------------------
# Display helpers (shared by the CLI, the dashboard and the report so they print alike)
# --------------------------------------------------------------------------------------------


def format_value(value: float | None) -> str:
    """Two decimals, as the seed's table (``-0.00`` shown as ``0.00``); ``""`` for None."""
    return "" if value is None else f"{round_display(value):.2f}"


def format_coverage(cell: Cell) -> str | None:
    """``k/N`` when fewer than all of the model's episodes were measured, else None."""
    return f"{cell.measured}/{cell.total}" if cell.measured < cell.total else None


def format_bounds(cell: Cell) -> str | None:
    """``[lower, upper]`` of a partial cell, else None."""
    if cell.lower is None or cell.upper is None:
        return None
    return f"[{format_value(cell.lower)}, {format_value(cell.upper)}]"


def cell_text(cell: Cell, *, coverage: bool = True, bounds: bool = True) -> str:
    """The cell as text: ``45.12``, ``45.12 (7/15)``, ``45.12 (14/15) [42.11, 48.78]``,
    ``n/a`` or ``missing`` (no value: never a 0 or 100 in its place)."""
    if cell.value is None:
        return "n/a" if cell.status == "not_applicable" else "missing"
    parts = [format_value(cell.value)]
    cov = format_coverage(cell) if coverage else None
    if cov:
        parts.append(f"({cov})")
    bnd = format_bounds(cell) if bounds else None
    if bnd:
        parts.append(bnd)
    return " ".join(parts)

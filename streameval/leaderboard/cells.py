"""Cells: one model (or episode) × column, with status, coverage and bounds.

Statuses (docs/methods.md#statuses): per column and model, an episode is *measured* (official with a
finite
value), *not_applicable* or *missing* (status missing, metric absent from its scores.json, an
official value that is not finite, or — unless ``include_incomplete`` — an episode whose run did
not complete). not_applicable and missing episodes are never imputed and never averaged in.
``total`` counts the model's scores.json files found (an episode whose file was never written
cannot be seen, and two files for the same episode are an input error, not two episodes);
``applicable`` = those where the metric applies (measured + missing: not_applicable ones lie
outside the metric's domain — a ``W``-only episode has no rot segment). ``coverage`` = measured
/ applicable, shown as ``k/N`` when k < N: a column is never shown short of episodes it could
not have measured, so a ``(k/N)`` always means N − k missing measurements. The cell is:

- ``official`` — at least one measured episode and none missing. not_applicable episodes do not
  make a cell partial, and do not show in its coverage: a rot cell over 15 episodes of which 8
  have no yaw segment is official with no ``(k/N)``;
- ``partial`` — measured episodes and missing ones; the value is the aggregate over the measured
  episodes (WorldAtlas, docs/methods.md#model-aggregation-and-coverage: the measured denominator is
  shown, the full-suite score stays unknown) and
  the bounds say where it would lie whatever the missing episodes had scored;
- ``not_applicable`` / ``missing`` — nothing measured; missing if any episode is missing, else
  not_applicable, with the episodes' reasons, deduplicated.

A metric defined for some suites only (``MetricSpec.suites``) counts the model's episodes of
those suites alone (N = its 480 memory_loop episodes, whatever else it ran); an episode of another
suite is not_applicable in the drill-down. A metric with ``unmeasured_is_missing`` (WorldAtlas's
scene-F1 task score) counts its not_applicable episodes as missing once anything is measured:
they count as applicable, the cell is then partial with bounds, its full-suite value unknown,
e.g. ``(479/480)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from streameval.core.metric_result import MetricResult
from streameval.leaderboard.columns import (
    aggregator_for,
    metric_scale,
    metric_suites,
    unmeasured_is_missing,
)
from streameval.leaderboard.rounding import Rank, round_display
from streameval.metrics.aggregation import Aggregator
from streameval.results.scores_file import EpisodeRecord

CellStatus = Literal["official", "partial", "not_applicable", "missing"]


@dataclass(frozen=True, slots=True)
class CellInterval:
    """A case run's anytime-valid interval on the column's full-set value
    (``leaderboard.intervals``), after ``cases`` of the ``of`` selected cases, and the ranks the
    model can still take given every ranked model's interval (``rank_low`` best, ``rank_high``
    worst: equal when no interval overlaps it)."""

    low: float
    high: float
    cases: int
    of: int
    rank_low: int | None = None
    rank_high: int | None = None

    @property
    def shared_rank(self) -> str | None:
        """``"2"`` or, when intervals overlap, ``"2–3"``; None when unranked."""
        if self.rank_low is None or self.rank_high is None:
            return None
        if self.rank_low == self.rank_high:
            return str(self.rank_low)
        return f"{self.rank_low}–{self.rank_high}"


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
    decimals: int = 2  # 4 for WorldAtlas's [0, 1] metrics (docs/methods.md#worldatlas-scale)
    interval: CellInterval | None = None  # ``table --ci`` on a case run only

    @property
    def applicable(self) -> int:
        """Episodes where the metric applies: all counted ones but the not_applicable."""
        return self.total - self.n_not_applicable

    @property
    def coverage(self) -> float:
        """Measured episodes / episodes where the metric applies (0 when none does)."""
        return self.measured / self.applicable if self.applicable else 0.0

    @property
    def display_value(self) -> float | None:
        """The value as displayed (``decimals``): what ranking compares."""
        return None if self.value is None else round_display(self.value, self.decimals)

    def to_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "status": self.status,
            "measured": self.measured,
            "total": self.total,
            "applicable": self.applicable,
            "n_missing": self.n_missing,
            "n_not_applicable": self.n_not_applicable,
            "lower": self.lower,
            "upper": self.upper,
            "reasons": list(self.reasons),
            "method": self.method,
            "n_units": self.n_units,
            "rank": self.rank,
            **self._interval_json(),
        }

    def _interval_json(self) -> dict[str, Any]:
        if self.interval is None:
            return {}
        i = self.interval
        return {
            "low": i.low,
            "high": i.high,
            "cases": i.cases,
            "of": i.of,
            "shared_rank": i.shared_rank,
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


def _other_suite(name: str) -> str:
    return f"defined for {', '.join(metric_suites(name))} episodes only"


def _counts(record: EpisodeRecord, name: str) -> bool:
    suites = metric_suites(name)
    return not suites or record.suite in suites


def episode_cell(record: EpisodeRecord, name: str, include_incomplete: bool = False) -> Cell:
    """One episode × column, for drill-down: the episode's normalized value and status."""
    return replace(_episode_cell(record, name, include_incomplete), decimals=metric_scale(name)[1])


def _episode_cell(record: EpisodeRecord, name: str, include_incomplete: bool) -> Cell:
    if not _counts(record, name):
        return Cell(None, "not_applicable", 0, 1, n_not_applicable=1, reasons=(_other_suite(name),))
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
    cell = _model_cell(episodes, name, aggregator, include_incomplete)
    return replace(cell, decimals=metric_scale(name)[1])


def _model_cell(
    episodes: Sequence[EpisodeRecord],
    name: str,
    aggregator: Aggregator | None,
    include_incomplete: bool,
) -> Cell:
    aggregate_fn = aggregator or aggregator_for(name)
    episodes = [record for record in episodes if _counts(record, name)]
    if not episodes:
        return Cell(None, "not_applicable", 0, 0, reasons=(_other_suite(name),))
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
    if n_na and unmeasured_is_missing(name):
        n_missing, n_na = n_missing + n_na, 0
    agg = aggregate_fn(measured, n_missing)
    top = metric_scale(name)[0]
    if not (math.isfinite(agg.value) and 0.0 <= agg.value <= top):
        # details that contradict the column's range (a hand-edited file): never ranked
        reason = f"details give {agg.value:g}, outside [0, {top:g}]"
        return Cell(None, "missing", 0, total, total - n_na, n_na, reasons=(*reasons, reason))
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

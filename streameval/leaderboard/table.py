"""The master table: rows per model, exclusion, ranking and sorting.

Colour (WorldMark: green = column best, yellow = second, red = worst): ranks are taken on values
rounded to two decimals, exactly as displayed (90.004 and 90.001 tie). Only ``official`` cells of
included models are ranked — a partial value covers a different set of episodes, so it is shown
uncoloured (WorldAtlas, docs/methods.md#statuses: only results with the same coverage are directly
comparable). Ranking
needs at least ``MIN_MODELS_TO_RANK`` (3) ranked values and at least two distinct values: with
one or two models "best" and "worst" would only restate the numbers. Dense ranking on distinct
rounded values: every cell equal to the top value is best, every cell equal to the lowest value
is worst, every cell equal to the second distinct value is second — unless that is also the
lowest (two distinct values), in which case worst wins.

Exclusion (WorldMark: "by default Open-Oasis (uniformly failing) and Genie3 (only 5 videos) are
excluded"), see ``ExclusionRule``: models named by the caller, models with fewer than
``min_episodes`` episodes (default 10), and models that fail uniformly — at least one official
direction-accuracy episode result (trans or rot) and every such result ≤ ``failure_max`` (default
1.00 on the 0–100 scale: under 1 % of the motion in the commanded direction in every episode).
Excluded models are returned with their reasons, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from streameval.errors import BadInputError
from streameval.leaderboard.cells import Cell, effective_result, model_cell
from streameval.leaderboard.columns import (
    Column,
    column_by_name,
    metric_scale,
    table_columns,
)
from streameval.leaderboard.rounding import Rank, format_value, round_display
from streameval.results.scores_file import EpisodeRecord, load_results

DEFAULT_MIN_EPISODES = 10  # WorldMark excluded Genie3 with 5 videos; full-suite models have more
UNIFORM_FAILURE_MAX = 1.0  # direction accuracy (0–100) at or below this in every episode = fails
MIN_MODELS_TO_RANK = 3  # green / yellow / red need three values to mean anything

_ACCURACY_COLUMNS = ("direction_accuracy_trans", "direction_accuracy_rot")


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
    """The published default exclusion rule (WorldMark), configurable.

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


def rank_values(values: Mapping[str, float | None], decimals: int = 2) -> dict[str, Rank]:
    """Best / second / worst per key, on values as displayed (``decimals``: 2 on 0–100, 4 on
    WorldAtlas's [0, 1]); rules in the module docstring."""
    rounded = {k: round_display(v, decimals) for k, v in values.items() if v is not None}
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


def rank_rows(rows: Sequence[ModelRow], columns: Sequence[Column] | None = None) -> list[ModelRow]:
    """``rows`` with ``Cell.rank`` set in every column; only official cells are ranked."""
    if columns is None:
        columns = table_columns({suite for row in rows for suite in row.suites})
    ranks = {
        c.name: rank_values(
            {r.model: r.cells[c.name].value for r in rows if r.cells[c.name].status == "official"},
            metric_scale(c.name)[1],
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

    def summary(self) -> str:
        """What the table holds, for its title: ``1 model, 3 episodes (1 excluded)``.

        Counts every model it shows — the ranked rows and the excluded ones (the dashboard
        greys them out, ``streameval table`` lists them under the grid) — with their episodes;
        ``(k excluded)`` says how many of them the exclusion rule (or ``--exclude``) left out
        of the ranking. The title thus never reads "0 models" above a model's row.
        """
        rows = (*self.rows, *(e.row for e in self.excluded))
        n_models, n_episodes = len(rows), sum(r.n_episodes for r in rows)
        text = (
            f"{n_models} model{'s' if n_models != 1 else ''}, "
            f"{n_episodes} episode{'s' if n_episodes != 1 else ''}"
        )
        return f"{text} ({len(self.excluded)} excluded)" if self.excluded else text

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
    columns: Sequence[Column] | None = None,
    include_incomplete: bool = False,
) -> ModelRow:
    """Aggregate one model's episodes into a row (unranked); ``columns`` None = every
    registered column of its episodes' suites."""
    if columns is None:
        columns = table_columns({e.suite for e in episodes})
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
    ``sort_by`` is a column name or ``"model"`` (default: model name). ``columns`` None =
    every registered column that applies to the episodes' suites, read now (a metric
    registered later is a column too; the WorldAtlas columns appear with memory_loop results).
    """
    episodes = list(episodes)
    if columns is None:
        columns = table_columns({e.suite for e in episodes})
    columns = tuple(columns)
    if sort_by not in (None, "model"):
        # KeyError with the known names; a suite's column absent from these results sorts
        # nothing (every row has no value) rather than failing
        column_by_name(sort_by, (*columns, *table_columns(every_suite=True)))
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

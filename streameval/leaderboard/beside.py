"""A user's rows beside a published leaderboard, split by split, with the ranks they can take.

``streameval table RESULTS --published worldmark[:SPLIT]`` (docs/cli.md#table). WorldMark
publishes one table per split (``first_view/real`` ...); a user's episode belongs to the split
its case's set names (``EpisodeRecord.case_set``). Episodes with no known split (no case, or a
manifest's own set) are shown under the split asked for, or against every split when none is
asked: the comparison then says so, since those episodes are not the split's cases.

Each user cell gets its value and, for a case run, the anytime-valid interval on the value
over the split's selected cases (``leaderboard.intervals.column_intervals`` over the run's
cases of that split, in run order: a seeded random order restricted to one set is still a
random order of that set); without a case run the interval is the value itself. Its rank range
against the published rows is then read off the interval (values compared as displayed, two
decimals): best = 1 + the published values above its high end, worst = 1 + the published
values at or above its low end (a tie goes to the published row), of the published rows plus
this one — ``#3–5 of 11``. Each user row is placed against the published rows alone, never
against another user row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from streameval.errors import BadInputError
from streameval.leaderboard.columns import Column, table_columns
from streameval.leaderboard.intervals import column_intervals, find_case_runs, read_case_run
from streameval.leaderboard.published import PublishedBoard, PublishedRow
from streameval.leaderboard.rounding import format_value, round_display
from streameval.leaderboard.table import MasterTable, build_table
from streameval.results.scores_file import EpisodeRecord

Placed = Literal["split", "asked", "unsplit"]
"""Why a user row is under a split: its cases are the split's (``split``), it has no known
split and this split was asked for (``asked``), or it has none and is shown against each."""


@dataclass(frozen=True, slots=True)
class Placement:
    """One user cell against the published column: the value, the interval on the split's
    full value (``low == high == value`` without a case run), after how many of how many
    cases (None without a case run), and the rank range among ``of`` rows."""

    value: float
    low: float
    high: float
    best: int
    worst: int
    of: int
    cases: int | None = None
    of_cases: int | None = None

    @property
    def rank_text(self) -> str:
        span = str(self.best) if self.best == self.worst else f"{self.best}–{self.worst}"
        return f"#{span} of {self.of}"

    def text(self) -> str:
        """``87.31 [85.02, 89.40] 41/125 cases #3–5 of 11`` (no interval part without one,
        and no bracket once the interval is the value)."""
        parts = [format_value(self.value)]
        if self.cases is not None:
            if self.low != self.high:  # a finished run's interval is its value
                parts.append(f"[{format_value(self.low)}, {format_value(self.high)}]")
            parts.append(f"{self.cases}/{self.of_cases} cases")
        parts.append(self.rank_text)
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "cases": self.cases,
            "of_cases": self.of_cases,
            "rank_best": self.best,
            "rank_worst": self.worst,
            "of": self.of,
            "rank": self.rank_text,
        }


@dataclass(frozen=True, slots=True)
class UserRow:
    """A user's model in one split: its episodes there, why it is there, and per column its
    placement (None when the column has no value: ``status`` says n/a or missing)."""

    model: str
    episodes: int
    placed: Placed
    cells: Mapping[str, Placement | None]
    status: Mapping[str, str]

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "source": "yours",
            "episodes": self.episodes,
            "placed": self.placed,
            "cells": {
                name: (
                    {"status": self.status[name], **cell.to_json()}
                    if cell is not None
                    else {"status": self.status[name], "value": None}
                )
                for name, cell in self.cells.items()
            },
        }


@dataclass(frozen=True, slots=True)
class SplitComparison:
    """One published split with the user's rows beside it."""

    board: PublishedBoard
    split: str
    label: str
    columns: tuple[Column, ...]
    published: tuple[PublishedRow, ...]
    users: tuple[UserRow, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "label": self.label,
            "columns": [c.name for c in self.columns],
            "published": [
                {
                    "model": row.model,
                    "source": "published",
                    "conditions": self.board.conditions_text,
                    "values": {c.name: row.values.get(c.name) for c in self.columns},
                }
                for row in self.published
            ],
            "yours": [row.to_json() for row in self.users],
            "notes": list(self.notes),
        }


def comparison_json(board: PublishedBoard, parts: Sequence[SplitComparison]) -> dict[str, Any]:
    """The ``published`` key of ``table --json``: the board's source and conditions, and each
    split with its published and user rows."""
    return {**board.to_json(), "compared": {p.split: p.to_json() for p in parts}}


def place(low: float, high: float, published: Sequence[float]) -> tuple[int, int, int]:
    """(best, worst, of): the ranks an interval ``[low, high]`` allows among ``published``
    values (module docstring), compared as displayed."""
    lo, hi = round_display(low), round_display(high)
    shown = [round_display(v) for v in published]
    best = 1 + sum(1 for v in shown if v > hi)
    worst = 1 + sum(1 for v in shown if v >= lo)
    return best, worst, len(shown) + 1


def _split_of(key: str) -> str:
    return key.rsplit("/", 1)[0] if "/" in key else ""


def _run_intervals(
    folder: Path, split: str | None, columns: Sequence[str]
) -> dict[str, tuple[float, float, int, int]]:
    """``{column: (low, high, cases, of)}`` of the case run in ``folder`` over its cases of
    ``split`` (all of them when None); empty when it holds none or cannot be read."""
    try:
        run = read_case_run(folder)
    except BadInputError:
        return {}
    keep = [i for i, key in enumerate(run.order) if split is None or _split_of(key) == split]
    if not keep:
        return {}
    records = [run.records[i] for i in keep if i < run.finished]
    found = column_intervals(records, len(keep), columns=columns, max_keys=run.max_keys)
    return {
        name: (i.low, i.high, i.cases, i.of) for name, i in found.items() if i.value is not None
    }


def _user_rows(
    table: MasterTable,
    board_split: Sequence[PublishedRow],
    columns: Sequence[Column],
    placed: Placed,
    runs: Mapping[str, Path],
    interval_split: str | None,
) -> list[UserRow]:
    rows: list[UserRow] = []
    names = [c.name for c in columns]
    for row in table.rows:
        intervals = (
            _run_intervals(runs[row.model], interval_split, names) if row.model in runs else {}
        )
        cells: dict[str, Placement | None] = {}
        status: dict[str, str] = {}
        for column in columns:
            cell = row.cells.get(column.name)
            status[column.name] = cell.status if cell is not None else "missing"
            if cell is None or cell.value is None:
                cells[column.name] = None
                continue
            low, high, cases, of_cases = intervals.get(
                column.name, (cell.value, cell.value, None, None)
            )
            values = [r.values[column.name] for r in board_split if column.name in r.values]
            best, worst, of = place(low, high, values)
            cells[column.name] = Placement(cell.value, low, high, best, worst, of, cases, of_cases)
        rows.append(UserRow(row.model, row.n_episodes, placed, cells, status))
    return rows


def compare_published(
    board: PublishedBoard,
    split: str | None,
    episodes: Sequence[EpisodeRecord],
    paths: Sequence[Path],
    **options: Any,
) -> list[SplitComparison]:
    """Every split of ``board`` (``split`` alone when given) with the user's rows beside it.

    ``episodes``: the user's results (``load_results``); ``paths``: the RESULTS_DIRs, where
    case runs are looked for (``find_case_runs``); ``options`` as for ``build_table`` (the
    exclusion rule and ``exclude`` apply to the user's rows as in their own table)."""
    options = {k: v for k, v in options.items() if k in ("exclude", "rule", "sort_by")}
    by_split: dict[str, list[EpisodeRecord]] = {}
    unsplit: list[EpisodeRecord] = []
    for record in episodes:
        if record.case_set is not None and record.case_set in board.splits:
            by_split.setdefault(record.case_set, []).append(record)
        else:
            unsplit.append(record)
    runs = find_case_runs(list(paths))
    wanted = [split] if split is not None else list(board.splits)
    parts: list[SplitComparison] = []
    for name in wanted:
        published = board.splits[name]
        present = {c for row in published.rows for c in row.values}
        columns = tuple(c for c in table_columns() if c.name in present)
        users: list[UserRow] = []
        notes: list[str] = []
        if by_split.get(name):
            table = build_table(by_split[name], columns=columns, **options)
            users += _user_rows(table, published.rows, columns, "split", runs, name)
            notes += [f"{e.model}: left out ({'; '.join(e.reasons)})" for e in table.excluded]
        if unsplit:
            placed: Placed = "asked" if split is not None else "unsplit"
            table = build_table(unsplit, columns=columns, **options)
            users += _user_rows(table, published.rows, columns, placed, runs, None)
            notes += [f"{e.model}: left out ({'; '.join(e.reasons)})" for e in table.excluded]
            if table.rows:
                notes.append(
                    f"{', '.join(r.model for r in table.rows)}: no {board.name} split recorded "
                    f"with the results; shown against {name}"
                    + (" as asked" if split is not None else " and every other split")
                )
        parts.append(
            SplitComparison(
                board, name, published.label, columns, published.rows, tuple(users), tuple(notes)
            )
        )
    return parts

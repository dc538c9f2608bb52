"""A case run's running intervals in the reports: in ``index.html`` each case run's bands (every
column's interval on its full-set value after each case, ``leaderboard.intervals``), in a
case's ``report.html`` where the run stood once that case was in
(docs/methods.md#running-intervals-over-a-case-run)."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from pathlib import Path

from streameval.errors import BadInputError
from streameval.leaderboard.intervals import (
    CASES_FILE,
    CaseRun,
    ColumnInterval,
    case_run_intervals,
    read_case_run,
)
from streameval.leaderboard.rounding import format_value
from streameval.report.html import png_img, table
from streameval.report.plots import _figure, to_png

_NOTE = (
    "95% anytime-valid interval on each column's value over the whole selected case set, "
    "after each case in the run's recorded order; valid at every case at once, so it may be "
    "read after any of them. At the last case it is the value itself."
)


def bands_figure(intervals: Mapping[str, ColumnInterval], marker: int | None = None) -> bytes:
    """One small panel per column with a value: its band (low–high) after each case;
    ``marker``: a case number to mark."""
    shown = [c for c in intervals.values() if c.value is not None and c.lows]
    columns = 4
    rows = max(1, -(-len(shown) // columns))
    fig = _figure(11.0, 2.1 * rows)
    for i, interval in enumerate(shown):
        ax = fig.add_subplot(rows, columns, i + 1)
        cases = list(range(1, len(interval.lows) + 1))
        ax.fill_between(cases, interval.lows, interval.highs, color="#0072B2", alpha=0.25)
        ax.plot(cases, interval.lows, color="#0072B2", linewidth=0.8)
        ax.plot(cases, interval.highs, color="#0072B2", linewidth=0.8)
        if marker is not None:
            ax.axvline(marker, color="#CC79A7", linewidth=0.8)
        ax.set_xlim(1, max(interval.of, 2))
        ax.set_title(interval.column, fontsize=8)
        ax.tick_params(labelsize=7)
    return to_png(fig)


def bands_table(intervals: Mapping[str, ColumnInterval]) -> str:
    rows = []
    for interval in intervals.values():
        if interval.value is None:
            continue
        rows.append(
            [
                interval.column,
                format_value(interval.value),
                f"[{format_value(interval.low)}, {format_value(interval.high)}]",
                f"{interval.cases}/{interval.of}",
            ]
        )
    return table(["column", "value so far", "interval on the full-set value", "cases"], rows)


def run_bands_fragment(model: str, model_dir: Path) -> list[str]:
    """The ``index.html`` section of one case run (nothing when it is unreadable)."""
    try:
        intervals = case_run_intervals(model_dir)
    except BadInputError:
        return []
    if not any(i.value is not None for i in intervals.values()):
        return []
    return [
        f"<h2>Running intervals: {escape(model)}</h2>",
        f"<p class='note'>{escape(_NOTE)}</p>",
        bands_table(intervals),
        png_img(bands_figure(intervals), f"running intervals of {model}"),
    ]


class CaseRunBands:
    """Every case run's intervals, computed once per run however many of its cases get a
    report (reading a run's cases and computing its intervals is the slow part)."""

    def __init__(self) -> None:
        self._runs: dict[Path, tuple[CaseRun, dict[str, ColumnInterval]] | None] = {}

    def fragment(self, results_dir: Path, case_key: str | None) -> list[str]:
        """The ``report.html`` section of a case in a case run: every column's interval once
        this case was in (nothing for an episode of no case run, or a case outside the run's
        finished prefix)."""
        if case_key is None:
            return []
        model_dir = next((p for p in results_dir.parents if (p / CASES_FILE).is_file()), None)
        if model_dir is None:
            return []
        if model_dir not in self._runs:
            try:
                self._runs[model_dir] = (
                    read_case_run(model_dir),
                    case_run_intervals(model_dir),
                )
            except BadInputError:
                self._runs[model_dir] = None
        found = self._runs[model_dir]
        if found is None or case_key not in found[0].order:
            return []
        run, intervals = found
        position = run.order.index(case_key) + 1
        if position > run.finished:
            return []
        rows = [
            [
                name,
                f"[{format_value(interval.lows[position - 1])}, "
                f"{format_value(interval.highs[position - 1])}]",
            ]
            for name, interval in intervals.items()
            if interval.value is not None
        ]
        return [
            f"<h2>Case run: intervals after this case ({position} of {run.population})</h2>",
            f"<p class='note'>{escape(_NOTE)} All the run's bands: index.html.</p>",
            table(["column", "interval on the full-set value"], rows),
        ]

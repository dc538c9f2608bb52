"""The master table in the terminal (``streameval table``'s default), drawn with rich in
WorldMark's colours: best bold green, second yellow, worst red. A terminal too narrow for every
column gets the columns in several stacked tables, never fewer columns; piped output is printed
at its natural width, so the numbers are never squashed. rich is imported on use, so the other
formats work without it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from streameval.leaderboard import (
    RANK_COLOURS,
    Column,
    MasterTable,
    cell_text,
    format_bounds,
    format_coverage,
)
from streameval.leaderboard.diagnostics import Diagnostics
from streameval.leaderboard.display import format_interval
from streameval.leaderboard.formats.legend import CI_LEGEND, DIAG_NOTE, LEGEND, has_intervals
from streameval.leaderboard.rounding import RICH_STYLES


def _rich_grid(table: MasterTable, columns: Sequence[Column], title: str | None) -> Any:
    """A rich table of ``columns`` (with Model and Ep. first) for every included model."""
    from rich.table import Table
    from rich.text import Text

    grid = Table(title=title)
    grid.add_column("Model", no_wrap=True)
    grid.add_column("Ep.", justify="right")
    for column in columns:
        grid.add_column(column.short, justify="right", min_width=6)  # "100.00" never breaks
    for row in table.rows:
        texts = []
        for column in columns:
            cell = row.cells[column.name]
            # Coverage and bounds on their own lines keep the 13 columns narrow.
            body = cell_text(cell, coverage=False, bounds=False)
            cov = format_coverage(cell) if cell.value is not None else None
            parts = (cov and f"({cov})", format_bounds(cell), format_interval(cell))
            extra = [part for part in parts if part]
            style = RICH_STYLES[cell.rank] if cell.rank else ("dim" if cell.value is None else "")
            texts.append(Text("\n".join([body, *extra]), style=style))
        grid.add_row(Text(row.model), str(row.n_episodes), *texts)
    return grid


def column_chunks(
    table: MasterTable, width: int, measure: Callable[[Any], int]
) -> list[list[Column]]:
    """The columns in consecutive groups whose tables each fit ``width`` (one column per group
    at least): a narrow terminal gets stacked tables, never silently fewer columns."""
    chunks: list[list[Column]] = []
    current: list[Column] = []
    for column in table.columns:
        if current and measure(_rich_grid(table, [*current, column], None)) > width:
            chunks.append(current)
            current = []
        current.append(column)
    if current:
        chunks.append(current)
    return chunks


def render_rich(
    table: MasterTable,
    file: TextIO,
    width: int | None = None,
    *,
    label: str | None = None,
    legend: bool = True,
) -> None:
    """The table for the terminal; rich is imported here so ``--markdown`` works without it.

    ``width`` (default: the terminal's, or ``COLUMNS``) bounds every line; piped output with
    neither is printed at its natural width, so the numbers are never squashed. ``label``
    goes into the title (a benchmark set, ``all sets``); ``legend`` False leaves the legend
    and the column names to the last table printed.
    """
    from rich.console import Console
    from rich.text import Text

    console = Console(file=file, width=width)
    full = _rich_grid(table, table.columns, None)
    if width is None and not console.is_terminal and "COLUMNS" not in os.environ:
        needed = console.measure(full, options=console.options.update(max_width=10_000)).maximum
        console = Console(file=file, width=max(console.width, needed))

    def measure(grid: Any) -> int:
        return int(console.measure(grid, options=console.options.update(max_width=10_000)).maximum)

    chunks = column_chunks(table, console.width, measure)
    for i, columns in enumerate(chunks):
        part = f" ({i + 1}/{len(chunks)})" if len(chunks) > 1 else ""
        which = f" · {label}" if label else ""
        title = f"streameval master table{part}{which} · {table.summary()}"
        console.print(_rich_grid(table, columns, title))
    if legend:
        console.print(Text(LEGEND.format(**RANK_COLOURS)), style="italic")
        if has_intervals(table):
            console.print(Text(CI_LEGEND), style="italic")
        console.print(
            Text("Columns: " + ", ".join(f"{c.short} = {c.label}" for c in table.columns)),
            style="dim",
        )
    if table.excluded:
        console.print("Excluded:")
        for e in table.excluded:
            console.print(
                Text(f"  {e.model} ({e.row.n_episodes} episodes): {'; '.join(e.reasons)}")
            )


def render_diagnostics_rich(diag: Diagnostics, file: TextIO) -> None:
    """The diagnostics as a second terminal table, one row per metric (they are many and
    their labels long, so metrics go down and models across)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(file=file)
    if not diag.metrics:
        console.print("Diagnostics: none reported by these episodes.")
        return
    grid = Table(title="diagnostics (own units)")
    grid.add_column("Metric", no_wrap=True)
    for model, _ in diag.rows:
        grid.add_column(Text(model), justify="right")  # Text: "[clean]" is no rich markup
    for spec in diag.metrics:
        texts = []
        for _, cells in diag.rows:
            cell = cells[spec.name]
            texts.append(Text(cell.text(), style="dim" if cell.mean is None else ""))
        grid.add_row(Text(spec.label), *texts)
    console.print(grid)
    console.print(Text(DIAG_NOTE), style="dim")

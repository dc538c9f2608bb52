"""``streameval table RESULTS_DIR...``: the master table across models (docs/cli.md#table).

All numbers, statuses, exclusions and ranks come from ``streameval.leaderboard``; this module only
draws them, as a rich table in the terminal or as Markdown (``--markdown``); ``--json``,
``--csv`` and ``--html FILE`` are in ``leaderboard.formats`` and ``report.master``. A terminal too
narrow for every column gets the columns in several stacked tables, never fewer columns.

Colour: in the terminal WorldMark's colours (best bold green, second yellow, worst red). Markdown
has no colour, so each ranked value carries an emoji in front — 🟢 best, 🟡 second, 🔴 worst —
and a legend line says so; emoji survive GitHub, GitLab and chat renderers, where
bold/italic would be easy to miss. Partial cells show ``value (k/N) [lower, upper]``; cells
without a value show ``n/a`` or ``missing``. Excluded models are listed under the table with
their reasons; unreadable inputs go to stderr, one line each naming the file, and make the exit
status 2 while the rest is still tabulated.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from streameval.cli import published
from streameval.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from streameval.leaderboard import (
    DEFAULT_MIN_EPISODES,
    INCLUDE_ALL,
    RANK_COLOURS,
    UNIFORM_FAILURE_MAX,
    Cell,
    Column,
    ExclusionRule,
    MasterTable,
    build_table,
    cell_text,
    column_names,
    format_bounds,
    format_coverage,
    format_value,
    load_results,
)
from streameval.leaderboard.diagnostics import Diagnostics, diagnostics
from streameval.leaderboard.display import format_interval
from streameval.leaderboard.rounding import MARKDOWN_MARKS, RICH_STYLES
from streameval.leaderboard.sets import ALL_SETS, set_tables

_LEGEND = (
    "per column: {best} best, {second} second, {worst} worst — ranked on the two-decimal values "
    "of official cells, needs at least 3 models; (k/N) = measured episodes / episodes where "
    "the metric applies, "
    "[lower, upper] = range if the missing episodes were measured"
)

_CI_LEGEND = (
    "[low, high]  n/N cases = 95% anytime-valid interval on the column's value over all N "
    "cases, after n of them (a finished run: its value); #a–b = the ranks the model can still "
    "take given the intervals"
)


def _has_intervals(table: MasterTable) -> bool:
    return any(cell.interval is not None for row in table.rows for cell in row.cells.values())


def _min_episodes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def add_parser(sub: Any) -> None:
    """Add ``table`` to the ``streameval`` sub-command parsers (``sub`` is what
    ``ArgumentParser.add_subparsers`` returned); ``cli.main`` dispatches to ``run``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "table",
        help="master table across models",
        description=(
            "WorldMark's master table across models, from the scores.json files found below "
            "each RESULTS_DIR. By default models with fewer than --min-episodes episodes and "
            "models that fail uniformly (direction accuracy ≤ "
            f"{format_value(UNIFORM_FAILURE_MAX)} in every episode) are left out and listed "
            "with their reason."
        ),
    )
    parser.add_argument(
        "results", nargs="*", type=Path, metavar="RESULTS_DIR", help="results directories"
    )
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--markdown", action="store_true", help="print a Markdown table")
    fmt.add_argument(
        "--json", action="store_true", help="print the table as JSON (every cell with status)"
    )
    fmt.add_argument(
        "--csv", action="store_true", help="print the table as CSV (value, status, coverage)"
    )
    fmt.add_argument(
        "--html",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the table as a self-contained HTML page (with bar charts) to FILE",
    )
    columns = column_names(every_suite=True)  # the registered columns (metrics/registry.py)
    parser.add_argument(
        "--sort",
        choices=["model", *columns],
        default=None,
        metavar="COLUMN",
        help="sort by this column, best first (default: model name); one of: " + ", ".join(columns),
    )
    parser.add_argument(
        "--exclude",
        nargs="+",
        action="extend",
        default=[],
        metavar="MODEL",
        help="leave these models out (put it after the RESULTS_DIRs)",
    )
    parser.add_argument(
        "--min-episodes",
        type=_min_episodes,
        default=DEFAULT_MIN_EPISODES,
        metavar="N",
        help=f"leave out models with fewer episodes (default {DEFAULT_MIN_EPISODES})",
    )
    parser.add_argument(
        "--include-all",
        action="store_true",
        help="turn the default exclusion rule off (--exclude still applies)",
    )
    parser.add_argument(
        "--ci",
        action="store_true",
        help=(
            "for case runs (--cases): each cell's 95%% anytime-valid interval on the value over "
            "the whole selected case set, after how many cases, and the ranks the model can "
            "still take (#2–3 when intervals overlap); a finished run's interval is its value "
            "(docs/methods.md#running-intervals-over-a-case-run)"
        ),
    )
    parser.add_argument(
        "--diagnostics",
        action="store_true",
        help=(
            "also show the registered metrics that are no column (imaging statistics, rollout "
            "drift, ...): per model the mean raw value in its own unit, unranked"
        ),
    )
    published.add_option(parser)


def run(args: argparse.Namespace) -> int:
    """Print the table; 2 if any input was bad (reported on stderr, one line each), else 0."""
    if args.published == published.LIST:
        sys.stdout.write(published.listing())
        return EXIT_OK
    if not args.results:
        print("error: table: give at least one RESULTS_DIR", file=sys.stderr)
        return EXIT_BAD_INPUT
    bad = published.check_spec(args.published) if args.published else None
    if bad:
        print(f"error: {bad}", file=sys.stderr)
        return EXIT_BAD_INPUT
    rule = INCLUDE_ALL if args.include_all else ExclusionRule(min_episodes=args.min_episodes)
    loaded = load_results(args.results)
    options: dict[str, Any] = {"exclude": args.exclude, "rule": rule, "sort_by": args.sort}
    table = build_table(loaded.episodes, errors=loaded.errors, **options)
    if args.ci:
        from streameval.leaderboard.intervals import find_case_runs, with_intervals

        table = with_intervals(table, find_case_runs(args.results))
    # results of benchmark cases: a table per set (first_view/real, ...) beside the whole
    sets = set_tables(loaded.episodes, **options)
    for err in table.errors:
        print(f"error: {err}", file=sys.stderr)
    from streameval.leaderboard.formats import (
        backend_notes,
        empty_table_message,
        table_csv,
        table_json,
    )

    for note in [*table.notes, *backend_notes(table)]:
        print(f"warning: {note}", file=sys.stderr)
    empty = empty_table_message(table, rule)
    if empty:
        print(f"note: {empty}", file=sys.stderr)
    diag = diagnostics(table) if args.diagnostics else None
    beside = (
        published.comparisons(args.published, loaded.episodes, args.results, **options)
        if args.published
        else None
    )
    if args.json:
        text = table_json(table, diag, sets)
        if beside is not None:
            text = published.with_json(text, beside)
        sys.stdout.write(text)
    elif args.csv:
        if beside is not None:  # its own columns (split, row, ranks): a CSV of its own
            from streameval.leaderboard.beside_formats import comparison_csv

            sys.stdout.write(comparison_csv(beside))
        else:
            sys.stdout.write(table_csv(table, diag, sets))
    elif args.html is not None:
        from streameval.report.master import render_master_table

        try:
            page = render_master_table(table, sets=sets, published=beside)
            args.html.write_text(page, encoding="utf-8")
        except OSError as exc:
            print(f"error: {args.html}: cannot write ({exc.strerror})", file=sys.stderr)
            return EXIT_BAD_INPUT
        print(f"wrote {args.html}")
    elif args.markdown:
        for name, part in sets.items():
            sys.stdout.write(f"### {name}\n\n" + render_markdown(part, legend=False) + "\n")
        if sets:
            sys.stdout.write(f"### {ALL_SETS}\n\n")
        sys.stdout.write(render_markdown(table))
        if diag is not None:
            sys.stdout.write(render_diagnostics_markdown(diag))
        if beside is not None:
            from streameval.leaderboard.beside_formats import comparison_markdown

            sys.stdout.write("\n" + comparison_markdown(beside))
    else:
        for name, part in sets.items():
            render_rich(part, sys.stdout, label=name, legend=False)
        render_rich(table, sys.stdout, label=ALL_SETS if sets else None)
        if diag is not None:
            render_diagnostics_rich(diag, sys.stdout)
        if beside is not None:
            published.render_rich(beside, sys.stdout)
    return EXIT_BAD_INPUT if table.errors else EXIT_OK


# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------


def _md_escape(text: str) -> str:
    """Cell text safe inside a Markdown table row."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown_cell(cell: Cell) -> str:
    """``🟢 45.12`` for a ranked cell, the plain ``cell_text`` otherwise."""
    text = cell_text(cell)
    return f"{MARKDOWN_MARKS[cell.rank]} {text}" if cell.rank else text


def render_markdown(table: MasterTable, *, legend: bool = True) -> str:
    """The whole table as Markdown: header, one row per included model, legend (unless
    ``legend`` is False: a benchmark set's table above the one over all sets), exclusions."""
    header = ["Model", "Episodes", *(c.label for c in table.columns)]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join([" --- ", " ---: "] + [" ---: "] * len(table.columns)) + "|",
    ]
    for row in table.rows:
        cells = [markdown_cell(row.cells[c.name]) for c in table.columns]
        lines.append("| " + " | ".join([_md_escape(row.model), str(row.n_episodes), *cells]) + " |")
    if not table.rows:
        lines.append("| " + " | ".join(["(no model)", *[""] * (len(header) - 1)]) + " |")
    if legend:
        lines += ["", _LEGEND.format(**MARKDOWN_MARKS)]
        lines += [_CI_LEGEND] if _has_intervals(table) else []
    if table.excluded:
        lines += ["", "Excluded:"]
        lines += [
            f"- {_md_escape(e.model)} ({e.row.n_episodes} episodes): {'; '.join(e.reasons)}"
            for e in table.excluded
        ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Terminal (rich)
# --------------------------------------------------------------------------------------------


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
        console.print(Text(_LEGEND.format(**RANK_COLOURS)), style="italic")
        if _has_intervals(table):
            console.print(Text(_CI_LEGEND), style="italic")
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


# --------------------------------------------------------------------------------------------
# Diagnostics (--diagnostics): non-column metrics in their own units
# --------------------------------------------------------------------------------------------

_DIAG_NOTE = (
    "mean over each model's measured episodes (k/N when not all), in the metric's own unit; "
    "not ranked: these have no better direction on a common scale"
)


def render_diagnostics_markdown(diag: Diagnostics) -> str:
    """The diagnostics as a second Markdown table (nothing when no episode reported one)."""
    if not diag.metrics:
        return "\nDiagnostics: none reported by these episodes.\n"
    header = ["Model", *(s.label for s in diag.metrics)]
    lines = [
        "",
        "Diagnostics:",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join([" --- "] + [" ---: "] * len(diag.metrics)) + "|",
    ]
    for model, cells in diag.rows:
        texts = [_md_escape(cells[s.name].text()) for s in diag.metrics]
        lines.append("| " + " | ".join([_md_escape(model), *texts]) + " |")
    lines += ["", _DIAG_NOTE]
    return "\n".join(lines) + "\n"


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
    console.print(Text(_DIAG_NOTE), style="dim")

"""``streameval table RESULTS_DIR...``: the master table across models (docs/cli.md#table).

This module parses the arguments and picks a format: every number, status, exclusion and rank
comes from ``streameval.leaderboard``, and each format is drawn by its module in
``leaderboard/formats/`` (the terminal's rich table by default, ``--markdown``, ``--json``,
``--csv``, ``--html FILE`` through the report's page). Unreadable inputs go to stderr, one line
each naming the file, and make the exit status 2 while the rest is still tabulated.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from streameval.cli import published
from streameval.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from streameval.leaderboard import (
    DEFAULT_MIN_EPISODES,
    INCLUDE_ALL,
    UNIFORM_FAILURE_MAX,
    ExclusionRule,
    build_table,
    column_names,
    format_value,
    load_results,
)
from streameval.leaderboard.diagnostics import diagnostics
from streameval.leaderboard.formats.csv_table import table_csv
from streameval.leaderboard.formats.json_table import table_json
from streameval.leaderboard.formats.markdown import (
    render_diagnostics_markdown,
    render_markdown,
)
from streameval.leaderboard.formats.notes import backend_notes, empty_table_message
from streameval.leaderboard.formats.terminal import render_diagnostics_rich, render_rich
from streameval.leaderboard.sets import ALL_SETS, set_tables


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
        from streameval.core.atomic import write_text_atomic
        from streameval.report.master import render_master_table

        try:
            page = render_master_table(table, sets=sets, published=beside)
            write_text_atomic(args.html, page)
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

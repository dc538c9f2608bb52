"""``streameval dashboard RESULTS_DIR...``: browse finished results in the dashboard.

The leaderboard (same exclusion rule as ``table``; ``a`` ranks every model), drill-down from a
model to its episodes and segments, and ``o`` on an episode opens its report.html. Nothing is
evaluated: the App runs with no jobs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from streameval.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from streameval.errors import BadInputError
from streameval.results.scores_file import find_scores_files


def add_dashboard_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "dashboard",
        help="browse finished results (leaderboard, drill-down, reports)",
        description="Browse finished results in the dashboard: the leaderboard, each model's "
        "episodes and segments, and (key o) an episode's report.html.",
    )
    parser.add_argument(
        "results", nargs="+", type=Path, metavar="RESULTS_DIR", help="results directories"
    )
    return parser


def browse_app(results: list[Path]) -> Any:
    """The dashboard over ``results``, opening on the leaderboard."""
    from streameval.tui import DashboardApp, DashboardOptions

    options = DashboardOptions(
        autostart=False, leaderboard_dirs=tuple(results), start_mode="leaderboard"
    )
    return DashboardApp([], options=options)


def run_browse(args: argparse.Namespace) -> int:
    if not args.results:
        print("error: dashboard: give RESULTS_DIR... or --mqtt URL", file=sys.stderr)
        return EXIT_BAD_INPUT
    good: list[Path] = []
    for path in args.results:
        try:
            find_scores_files(path)
        except BadInputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            continue
        good.append(path)
    if not good:
        return EXIT_BAD_INPUT
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(
            "error: dashboard: needs a terminal; use streameval table or streameval report",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    browse_app(good).run()
    return EXIT_OK if len(good) == len(args.results) else EXIT_BAD_INPUT

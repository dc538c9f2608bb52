"""``streameval dashboard RESULTS_DIR...``: browse finished results in the dashboard.

The leaderboard (same exclusion rule as ``table``; ``a`` ranks every model), drill-down from a
model to its episodes and segments, and ``o`` on an episode opens its report.html. Nothing is
evaluated: the App runs with no jobs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from streameval.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from streameval.errors import BadInputError
from streameval.results.scores_file import find_scores_files
from streameval.transports.mqtt.url import connect_problem, is_mqtt_error


def browse_app(results: list[Path]) -> Any:
    """The dashboard over ``results``, opening on the leaderboard."""
    from streameval.tui import DashboardApp, DashboardOptions

    options = DashboardOptions(
        autostart=False, leaderboard_dirs=tuple(results), start_mode="leaderboard"
    )
    return DashboardApp([], options=options)


def _browse(args: argparse.Namespace) -> int:
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


def add_parser(sub: Any) -> None:
    dashboard = sub.add_parser(
        "dashboard",
        help="browse finished results (RESULTS_DIR...) or watch an evaluation running "
        "elsewhere (--mqtt)",
        description="With RESULTS_DIR...: browse finished results (leaderboard, each model's "
        "episodes and segments, and key o: an episode's report.html). With --mqtt: watch the "
        "live scores of an evaluation running elsewhere.",
    )
    dashboard.add_argument(
        "results",
        nargs="*",
        type=Path,
        metavar="RESULTS_DIR",
        help="results directories to browse (not with --mqtt)",
    )
    dashboard.add_argument(
        "--mqtt",
        default=None,
        metavar="URL",
        help="mqtt[s]://HOST:PORT[/SESSION]: live scores published by the evaluator "
        "(every session on the broker without SESSION)",
    )
    dashboard.add_argument("--no-tui", action="store_true", help="one line per update")


def run(args: argparse.Namespace) -> int:
    """Browse finished results, or watch a remote evaluation (``--mqtt``)."""
    if args.mqtt is None:
        return _browse(args)
    return _watch(args)


def _watch(args: argparse.Namespace) -> int:
    from streameval.transports.mqtt.url import parse_mqtt_url

    if getattr(args, "results", None):
        raise BadInputError("dashboard", "RESULTS_DIR... or --mqtt URL, not both")

    parse_mqtt_url(args.mqtt, session_required=False)  # bad URL: exit 2 before anything
    if args.no_tui or not (sys.stdout.isatty() and sys.stdin.isatty()):
        from streameval.transports.mqtt.remote_watch import format_update, watch_scores

        try:
            from streameval.errors import redact_url

            def subscribed() -> None:
                print(f"watching {redact_url(args.mqtt)}", file=sys.stderr, flush=True)

            def show(session: str, update: Any) -> None:
                print(format_update(session, update), flush=True)

            asyncio.run(watch_scores(args.mqtt, show, subscribed))
        except KeyboardInterrupt:  # the way to stop watching
            return EXIT_OK
        except Exception as exc:
            if is_mqtt_error(exc):
                raise BadInputError(args.mqtt, connect_problem(exc)) from None
            raise
        return EXIT_OK
    from streameval.transports.mqtt.remote_watch import check_broker
    from streameval.tui.remote import RemoteDashboardApp

    try:
        asyncio.run(check_broker(args.mqtt))
    except Exception as exc:
        if is_mqtt_error(exc):
            raise BadInputError(args.mqtt, connect_problem(exc)) from None
        raise
    RemoteDashboardApp(args.mqtt).run()
    return EXIT_OK

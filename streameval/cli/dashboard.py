"""``streameval dashboard RESULTS_DIR...``: browse finished results in the dashboard.

The leaderboard (same exclusion rule as ``table``; ``a`` ranks every model), drill-down from a
model to its episodes and segments, and ``o`` on an episode opens its report.html. A folder
holding a case run (``cases.json``) opens on the case-set view instead (``c``; ``t``: the
leaderboard), read again every few seconds so that a run still writing into it is followed.
Nothing is evaluated: the App runs with no jobs.

``--serve HOST:PORT`` serves the same App in a browser (textual-serve): every page opened runs
this command again, without ``--serve``, behind a web terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from streameval.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from streameval.errors import BadInputError
from streameval.results.scores_file import find_scores_files
from streameval.transports.mqtt.url import connect_problem, is_mqtt_error

CASE_RELOAD_S = 5.0
"""How often the case-set view of a folder reads it again (a case takes tens of seconds)."""

SERVED_DRIVER = "TEXTUAL_DRIVER"
"""Set by textual-serve for the App it runs behind a web page: no terminal, yet a screen."""


def browse_app(results: list[Path]) -> Any:
    """The dashboard over ``results``: the case-set view when they hold a case run, else the
    leaderboard."""
    from streameval.tui import DashboardApp, DashboardOptions
    from streameval.tui.cases import find_case_runs

    case_runs = tuple(run for path in results for run in find_case_runs(path))
    options = DashboardOptions(
        autostart=False,
        leaderboard_dirs=tuple(results),
        start_mode="cases" if case_runs else "leaderboard",
        case_runs=case_runs,
        reload_interval_s=CASE_RELOAD_S if case_runs else None,
    )
    return DashboardApp([], options=options)


def _has_screen() -> bool:
    """A terminal on both ends, or a web page (``--serve``) standing in for one."""
    return bool(os.environ.get(SERVED_DRIVER)) or (sys.stdin.isatty() and sys.stdout.isatty())


def parse_serve(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080`` for an IPv6 address) of ``--serve``."""
    host, sep, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadInputError("--serve", f"{text!r} is not HOST:PORT (e.g. 127.0.0.1:8080)")
    return host, int(port)


def served_command(args: argparse.Namespace) -> str:
    """This command line without ``--serve``: what each browser page runs."""
    parts = [sys.executable, "-m", "streameval", "dashboard"]
    if args.mqtt is not None:
        parts += ["--mqtt", args.mqtt]
    parts += [str(path.resolve()) for path in args.results]
    return shlex.join(parts)


def _serve(args: argparse.Namespace) -> int:
    host, port = parse_serve(args.serve)
    if args.no_tui:
        raise BadInputError("--serve", "serves the dashboard: not with --no-tui")
    try:
        from textual_serve.server import Server
    except ImportError:
        raise BadInputError(
            "--serve", "needs textual-serve: pip install 'streameval[web]'"
        ) from None
    if args.mqtt is None:
        if not args.results:
            raise BadInputError("dashboard", "give RESULTS_DIR... or --mqtt URL")
        for path in args.results:
            find_scores_files(path)  # a missing folder: exit 2 here, not in every page
    else:
        _check_watch(args)
        _check_broker(args.mqtt)
    title = "streameval dashboard"
    Server(served_command(args), host=host, port=port, title=title).serve()
    return EXIT_OK


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
    if not _has_screen():
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
    dashboard.add_argument(
        "--serve",
        default=None,
        metavar="HOST:PORT",
        help="serve the dashboard in a web browser at http://HOST:PORT (needs textual-serve: "
        "pip install 'streameval[web]'); each page opened runs its own dashboard",
    )


def run(args: argparse.Namespace) -> int:
    """Browse finished results, or watch a remote evaluation (``--mqtt``); ``--serve``: in a
    browser."""
    if args.serve:
        return _serve(args)
    if args.mqtt is None:
        return _browse(args)
    return _watch(args)


def _check_watch(args: argparse.Namespace) -> None:
    """Bad ``--mqtt`` input (with RESULTS_DIR, a bad URL): ``BadInputError``."""
    from streameval.transports.mqtt.url import parse_mqtt_url

    if args.results:
        raise BadInputError("dashboard", "RESULTS_DIR... or --mqtt URL, not both")
    parse_mqtt_url(args.mqtt, session_required=False)  # bad URL: exit 2 before anything


def _check_broker(url: str) -> None:
    """A broker that cannot be reached: ``BadInputError`` (exit 2), before any screen."""
    from streameval.transports.mqtt.remote_watch import check_broker

    try:
        asyncio.run(check_broker(url))
    except Exception as exc:
        if is_mqtt_error(exc):
            raise BadInputError(url, connect_problem(exc)) from None
        raise


def _watch(args: argparse.Namespace) -> int:
    _check_watch(args)
    if args.no_tui or not _has_screen():
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
    from streameval.tui.remote import RemoteDashboardApp

    _check_broker(args.mqtt)
    RemoteDashboardApp(args.mqtt).run()
    return EXIT_OK

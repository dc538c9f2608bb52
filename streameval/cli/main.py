"""The command line: ``streameval demo | attach | replay | rescore | table | report |
dashboard | serve | pool`` (docs/cli.md).

One module per command (``cli/<command>.py``: its parser and its runner), one dispatch table
here, and one place that turns the error tree into an exit status (docs/cli.md#exit-status:
0 success, 2 bad input with one line naming the input, 130 stopped by the user, 1 otherwise).
Nothing below ``cli/`` imports it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Sequence

from streameval import __version__
from streameval.cli import attach, dashboard, demo, replay, rescore, serve
from streameval.cli.exit_codes import EXIT_FAILURE, EXIT_INTERRUPTED, exit_status
from streameval.cli.options import OneLineParser, add_evaluation_options, configure_logging
from streameval.cli.ray import check_ray_usage, split_ray_flag
from streameval.core.registry import load_target
from streameval.errors import BadInputError

Runner = Callable[[argparse.Namespace], int]


def _lazy(target: str) -> Runner:
    """A command's runner imported when that command runs (``"module:function"``): ``table``
    and ``report`` need no pipeline, ``pool`` no dashboard."""

    def run(args: argparse.Namespace) -> int:
        runner: Runner = load_target(target)
        return runner(args)

    return run


# The one dispatch table: command -> runner (each returns its exit status).
COMMANDS: dict[str, Runner] = {
    "demo": demo.run,
    "attach": attach.run,
    "replay": replay.run,
    "rescore": rescore.run,
    "table": _lazy("streameval.cli.table:run_table"),
    "report": _lazy("streameval.cli.report:run_report"),
    "dashboard": dashboard.run,
    "serve": serve.run_serve,
    "pool": _lazy("streameval.cli.pool:run_pool"),
    "profiles": _lazy("streameval.cli.profiles:run_profiles"),
}


def build_parser() -> argparse.ArgumentParser:
    from streameval.cli.pool import add_pool_parser
    from streameval.cli.report import add_report_parser
    from streameval.cli.table import add_table_parser

    parser = OneLineParser(
        prog="streameval",
        description="Streaming, real-time evaluator for live world-model rollouts.",
    )
    parser.add_argument("--version", action="version", version=f"streameval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    demo.add_parser(sub)
    attach.add_parser(sub)
    serve.add_parser(sub)
    dashboard.add_parser(sub)
    replay.add_parser(sub)
    rescore.add_parser(sub)
    add_table_parser(sub)
    add_report_parser(sub)
    add_pool_parser(sub, add_evaluation_options)
    sub.add_parser("profiles", help="the built-in server profiles and what each expects")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, dispatch, and turn the error tree into an exit status — here and only here."""
    args = build_parser().parse_args(split_ray_flag(sys.argv[1:] if argv is None else argv))
    configure_logging(args)
    try:
        check_ray_usage(args)
        return COMMANDS[args.command](args)
    except BadInputError as exc:  # unknown names and unavailable backends included
        print(f"error: {exc}", file=sys.stderr)
        return exit_status(exc)
    except OSError as exc:  # the disk, not an input: one line, exit 1, never a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILURE
    except (KeyboardInterrupt, asyncio.CancelledError):
        where = f"; results in {args.out}/" if getattr(args, "out", None) else ""
        print(
            f"interrupted: episodes in progress were finalized as incomplete{where}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())

"""The command line: ``streameval demo | attach | replay | rescore | table | report |
dashboard | serve | pool | profiles | probe | verify | compare`` (docs/cli.md).

One module per command (``cli/<command>.py``: ``add_parser`` and ``run``), one table of them
here, and one place that turns the error tree into an exit status (docs/cli.md#exit-status:
0 success, 2 bad input with one line naming the input, 130 stopped by the user, 1 otherwise).
Nothing below ``cli/`` imports it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any, Protocol

from streameval.cli import (
    attach,
    compare,
    dashboard,
    demo,
    doctor,
    pool,
    probe,
    profiles,
    replay,
    report,
    rescore,
    serve,
    table,
    verify,
)
from streameval.cli.exit_codes import EXIT_FAILURE, EXIT_INTERRUPTED, exit_status
from streameval.cli.options import OneLineParser, configure_logging
from streameval.cli.ray import check_ray_usage, split_ray_flag
from streameval.core import cpu
from streameval.core.version import __version__
from streameval.errors import BadInputError


class Command(Protocol):
    """The shape of every ``cli/<command>.py``: ``add_parser`` adds the command to the
    sub-command parsers; ``run`` runs it and returns its exit status (``cli.exit_codes``)."""

    def add_parser(self, sub: Any) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


# The one table of commands, in the order ``streameval --help`` lists them. A command's module
# imports what only its runner needs (the pipeline, the dashboard, MQTT) inside ``run``.
COMMANDS: dict[str, Command] = {
    "demo": demo,
    "attach": attach,
    "serve": serve,
    "dashboard": dashboard,
    "replay": replay,
    "rescore": rescore,
    "table": table,
    "report": report,
    "pool": pool,
    "profiles": profiles,
    "probe": probe,
    "verify": verify,
    "compare": compare,
    "doctor": doctor,
}


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="streameval",
        description="Streaming, real-time evaluator for live world-model rollouts.",
    )
    parser.add_argument("--version", action="version", version=f"streameval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for command in COMMANDS.values():
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, dispatch, and turn the error tree into an exit status — here and only here."""
    typed = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(split_ray_flag(typed))
    args.typed_argv = typed  # for the run's ledger (cli.evaluate.ARGV)
    configure_logging(args)
    try:
        cpu.mode()  # a $STREAMEVAL_CPU_FEATURES it does not know: one line, before any work
        check_ray_usage(args)
        return COMMANDS[args.command].run(args)
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

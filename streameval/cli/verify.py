"""``streameval verify RUN``: re-hash every artifact of a run against its ledger and score every
episode again from its cache (in memory), naming each artifact that differs (docs/cli.md#verify).

Exit 0: the run is untouched; 1: something differs (each artifact named on its own line);
2: ``RUN`` is no run (no ledger), one line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from streameval.cli.exit_codes import EXIT_FAILURE, EXIT_OK


def add_parser(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "verify",
        help="check a run against its ledger and rescore it from its caches",
        description="Re-hash every file the run's ledger.json lists (recordings, caches, "
        "scores.json, reports, inputs still on this machine) and compute every episode's "
        "scores again from its cache, without writing; name each artifact that differs.",
    )
    parser.add_argument("run", type=Path, metavar="RUN", help="a run's results directory")
    parser.add_argument("--json", action="store_true", help="the findings as one JSON object")


def run(args: argparse.Namespace) -> int:
    from streameval.engine.verify import verify_run

    result = verify_run(args.run)  # BadInputError (no ledger): one line, exit 2 (cli.main)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        for difference in result.differences:
            print(f"differs: {difference.line()}")
        for note in result.notes:
            print(f"note: {note}", file=sys.stderr)
        verdict = (
            "untouched" if result.untouched else f"{len(result.differences)} artifact(s) differ"
        )
        print(
            f"{args.run}: {verdict} ({result.hashed} files re-hashed, "
            f"{result.rescored} episode(s) scored again from their caches)"
        )
    return EXIT_OK if result.untouched else EXIT_FAILURE

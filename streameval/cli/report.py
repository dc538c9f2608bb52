"""``streameval report RESULTS_DIR...`` and the reports a run writes when it ends.

Reports are drawn after the episodes, not inside the pipeline's event loop: matplotlib takes
about a second per episode, which would stall a live dashboard. A report that cannot be drawn
is a warning naming the folder, never a failed evaluation.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from streameval.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from streameval.errors import BadInputError
from streameval.report.writer import write_reports
from streameval.results.scores_file import SCORES_FILE


def add_parser(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "report",
        help="write report.html per episode and index.html per results directory",
        description="(Re)draw the self-contained HTML reports of finished results: "
        "report.html in every episode folder, index.html at the top of each RESULTS_DIR.",
    )
    parser.add_argument(
        "results", nargs="+", type=Path, metavar="RESULTS_DIR", help="results directories"
    )


def run(args: argparse.Namespace) -> int:
    status = EXIT_OK
    for root in args.results:
        if not root.is_dir():
            print(f"error: {BadInputError(root, 'no such results directory')}", file=sys.stderr)
            status = EXIT_BAD_INPUT
            continue
        dirs = sorted(p.parent for p in root.rglob(SCORES_FILE))
        if not dirs:
            print(f"error: {BadInputError(root, 'no scores.json found below it')}", file=sys.stderr)
            status = EXIT_BAD_INPUT
            continue
        warnings = write_reports(dirs, root)
        for warning in warnings:
            print(f"error: {warning}", file=sys.stderr)
        status = EXIT_BAD_INPUT if warnings else status
        print(f"{len(dirs) - len(warnings)} report(s); open {root / 'index.html'}")
    return status

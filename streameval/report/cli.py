"""``streameval report RESULTS_DIR...`` and the reports a run writes when it ends.

Reports are drawn after the episodes, not inside the pipeline's event loop: matplotlib takes
about a second per episode, which would stall a live dashboard. A report that cannot be drawn
is a warning naming the folder, never a failed evaluation.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from streameval.errors import BadInputError
from streameval.report.episode import write_episode_report
from streameval.report.index import write_index

log = logging.getLogger(__name__)
EXIT_OK, EXIT_BAD_INPUT = 0, 2


def add_report_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "report",
        help="write report.html per episode and index.html per results directory",
        description="(Re)draw the self-contained HTML reports of finished results: "
        "report.html in every episode folder, index.html at the top of each RESULTS_DIR.",
    )
    parser.add_argument(
        "results", nargs="+", type=Path, metavar="RESULTS_DIR", help="results directories"
    )
    return parser


def write_reports(episode_dirs: Iterable[Path], root: Path) -> list[str]:
    """Reports of ``episode_dirs`` and the index of ``root``; returns the warnings."""
    warnings: list[str] = []
    for d in episode_dirs:
        try:
            write_episode_report(d)
        except Exception as exc:  # a report is a view: it never fails the evaluation
            log.debug("report of %s failed", d, exc_info=True)
            warnings.append(f"{d}: report not written ({exc})")
    try:
        write_index(root)
    except Exception as exc:
        log.debug("index of %s failed", root, exc_info=True)
        warnings.append(f"{root}: index.html not written ({exc})")
    return warnings


def run_report(args: argparse.Namespace) -> int:
    status = EXIT_OK
    for root in args.results:
        if not root.is_dir():
            print(f"error: {BadInputError(root, 'no such results directory')}", file=sys.stderr)
            status = EXIT_BAD_INPUT
            continue
        dirs = sorted(p.parent for p in root.rglob("scores.json"))
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

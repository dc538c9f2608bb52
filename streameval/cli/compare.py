"""``streameval compare A B``: how two runs were configured differently (first), then every
master-table column of both side by side, with bounds and case-run intervals
(``leaderboard.compare``; docs/cli.md#compare)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from streameval.cli.exit_codes import EXIT_OK


def add_parser(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "compare",
        help="two runs side by side: configuration differences first, then the columns",
        description="List what differs between the configurations of runs A and B "
        "(transport, fps, resolution, backends, host, options, versions), then every column "
        "of both with its bounds and, for a case run, its anytime-valid interval.",
    )
    parser.add_argument("a", type=Path, metavar="A", help="a run's results directory")
    parser.add_argument("b", type=Path, metavar="B", help="another run's results directory")
    parser.add_argument("--json", action="store_true", help="the comparison as one JSON object")


def _aligned(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]


def render(comparison: Any) -> str:
    """The comparison as text: the configuration differences, then the columns."""
    lines = [f"A: {comparison.a}", f"B: {comparison.b}", ""]
    if comparison.differences:
        lines.append(f"Configuration differences ({len(comparison.differences)}):")
        rows = [["", "A", "B"]] + [[d.key, d.a, d.b] for d in comparison.differences]
        lines += ["  " + line for line in _aligned(rows)]
    else:
        lines.append("Configuration: no difference recorded")
    lines.append(f"({comparison.shared} configuration entries the same)")
    lines += ["", "Columns:"]
    models = {m for row in comparison.columns for m, _, _ in row.cells}
    rows = [["column", *(["model"] if len(models) > 1 else []), "A", "B"]]
    for row in comparison.columns:
        for model, a, b in row.cells:
            rows.append([row.label, *([model] if len(models) > 1 else []), a or "—", b or "—"])
    lines += ["  " + line for line in _aligned(rows)]
    lines += ["", "Runtime (scores.json runtime object, median over episodes):"]
    rows = [["field", "A", "B"], *([f, a, b] for f, a, b in comparison.runtime)]
    lines += ["  " + line for line in _aligned(rows)]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from streameval.leaderboard.compare import compare_runs

    comparison = compare_runs(args.a, args.b)  # BadInputError: one line, exit 2 (cli.main)
    print(json.dumps(comparison.to_json(), indent=2) if args.json else render(comparison))
    return EXIT_OK

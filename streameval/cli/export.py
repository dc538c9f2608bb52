"""``streameval export RUN --format worldmark|wbench|raw --out DIR``: a run's recordings in the
layout an offline benchmark reads (docs/cli.md#export; the layouts are
``results/exports.py``'s)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from streameval.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from streameval.errors import BadInputError


def add_parser(sub: Any) -> None:
    """Add ``export`` to the ``streameval`` sub-command parsers."""
    from streameval.results.exports import FORMATS

    parser: argparse.ArgumentParser = sub.add_parser(
        "export",
        help="write a run's recordings in an offline benchmark's layout",
        description=(
            "Write the recordings of a run (a results folder, a model's folder or an "
            "episode's) in the layout an offline benchmark reads: worldmark "
            "(real/first/MODEL/000_006.mp4 with its action log), wbench "
            "(MODEL/videos/case_<id>_combined.mp4 with turns.json) or raw (the recordings as "
            "streameval records them). The videos are the recordings' own bytes; export.json "
            "lists every file with its source and sha256. Episodes without a recording are "
            "skipped, one line each."
        ),
    )
    parser.add_argument("run", type=Path, metavar="RUN", help="a results folder")
    parser.add_argument("--format", required=True, choices=FORMATS, help="the layout to write")
    parser.add_argument("--out", required=True, type=Path, metavar="DIR", help="where to write")
    parser.add_argument(
        "--model-tag",
        default=None,
        metavar="TAG",
        help="worldmark: the model's folder name (default: its name, upper-cased)",
    )
    parser.add_argument(
        "--org", default="", help="wbench: the submitting organisation, for meta.json"
    )
    parser.add_argument("--contact", default="", help="wbench: a contact (e-mail) for meta.json")


def run(args: argparse.Namespace) -> int:
    """Export; 2 when RUN holds no results or nothing could be exported, else 0."""
    from streameval.results.exports import export_run

    try:
        result = export_run(
            args.run, args.format, args.out, tag=args.model_tag, org=args.org, contact=args.contact
        )
    except BadInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for line in result.skipped:
        print(f"skipped: {line}", file=sys.stderr)
    for line in result.warnings:
        print(f"warning: {line}", file=sys.stderr)
    n = len(result.exported)
    print(
        f"exported {n} episode{'s' if n != 1 else ''} ({args.format}) to {args.out}; "
        f"manifest {result.manifest}"
    )
    return EXIT_OK if n else EXIT_BAD_INPUT

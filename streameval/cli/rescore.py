"""``streameval rescore RESULTS_DIR...``: every score again from the episode caches, without
the video (``--quality``: rerate Q-Align from the cached 1-fps frames; ``--ray``: a cluster)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from streameval.cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK
from streameval.cli.options import quality_option
from streameval.cli.ray import add_ray_options
from streameval.errors import BadInputError


def add_parser(sub: Any) -> None:
    rescore = sub.add_parser("rescore", help="recompute scores from episode caches")
    rescore.add_argument("results", nargs="+", type=Path, help="results directories")
    quality_option(rescore)
    add_ray_options(rescore, gpus=False)


def run(args: argparse.Namespace) -> int:
    if args.ray is not None:
        from streameval.cli.ray import run_ray_rescore

        return run_ray_rescore(args)
    return _rescore(args)


def _rescore(args: argparse.Namespace) -> int:
    from streameval.engine.rescore import find_results_dirs, rescore_dir

    quality = None
    if args.quality:
        from streameval.perception.qalign import load_quality_backend

        quality = load_quality_backend(args.quality)  # fails fast, before any directory
    status = EXIT_OK
    for path in args.results:
        try:
            dirs = find_results_dirs(path)
        except BadInputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = EXIT_BAD_INPUT
            continue
        except OSError as exc:  # a name too long, a link loop
            print(f"error: {path}: {exc.strerror or exc}", file=sys.stderr)
            status = EXIT_BAD_INPUT
            continue
        for d in dirs:
            try:
                outcome = rescore_dir(d, quality=quality)
            except BadInputError as exc:
                print(f"error: {exc}", file=sys.stderr)
                status = EXIT_BAD_INPUT
                continue
            except Exception as exc:  # one episode's failure never loses the others
                print(f"error: {d}: rescore failed ({type(exc).__name__}: {exc})", file=sys.stderr)
                status = max(status, EXIT_FAILURE)
                continue
            what = "unchanged" if not outcome.changed else "changed: " + ", ".join(outcome.changed)
            print(f"rescored {d} ({what})")
    return status

"""``streameval demo``: the procedural world model, evaluated live (the embedded default)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from streameval.cli.evaluate import run_episodes
from streameval.cli.exit_codes import EXIT_OK
from streameval.cli.options import (
    add_evaluation_options,
    add_output_options,
    loop_plan,
    memory_loop_options,
    parse_actions,
    ranged,
)
from streameval.inputs.numbers import SECONDS_PER_KEY
from streameval.runs.builders import demo_jobs
from streameval.runs.jobs import EpisodeJob, JobsReport


def add_parser(sub: Any) -> None:
    demo = sub.add_parser("demo", help="procedural world model, evaluated live")
    demo.add_argument(
        "--out",
        type=Path,
        default=Path("results/demo"),
        help="results directory: OUT/<model>/<episode>/ (default results/demo)",
    )
    demo.add_argument("--defect", default="clean", help="inject a defect (see --list-defects)")
    demo.add_argument("--list-defects", action="store_true", help="list defect presets and exit")
    demo.add_argument(
        "--actions",
        type=parse_actions,
        default=[9, 14, 12],
        help="worldmark action ids, e.g. 9,14,12 or 1-15 (default: 9,14,12 = WR, ADA, LRL)",
    )
    demo.add_argument(
        "--seconds-per-key",
        type=ranged(SECONDS_PER_KEY),
        default=20.0,
        help="video seconds per key (default 20)",
    )
    demo.add_argument("--seed", type=int, default=0, help="scene seed of the procedural world")
    memory_loop_options(demo)
    add_evaluation_options(demo)
    add_output_options(demo, record=True)


def jobs(args: argparse.Namespace, report: JobsReport) -> list[EpisodeJob]:
    return demo_jobs(
        args.out,
        defect=args.defect,
        seed=args.seed,
        actions=args.actions,
        seconds_per_key=args.seconds_per_key,
        suite=args.suite,
        loops=loop_plan(args),
        record=args.record,
    )


def run(args: argparse.Namespace) -> int:
    if args.list_defects:
        from streameval.worlds.procedural_world import DEFECT_PRESETS

        print("\n".join(DEFECT_PRESETS))
        return EXIT_OK
    return run_episodes(args, jobs)

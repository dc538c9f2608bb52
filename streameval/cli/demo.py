"""``streameval demo``: the procedural world model, evaluated live (the embedded default)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from streameval.cli.evaluate import run_episodes
from streameval.cli.exit_codes import EXIT_OK
from streameval.cli.options import (
    add_case_options,
    add_evaluation_options,
    add_output_options,
    case_selection,
    loop_plan,
    memory_loop_options,
    parse_actions,
    ranged,
)
from streameval.errors import BadInputError
from streameval.inputs.numbers import SECONDS_PER_KEY
from streameval.protocol.suites import SOAK_SUITE
from streameval.runs.builders import demo_jobs
from streameval.runs.cases import demo_case_jobs
from streameval.runs.jobs import EpisodeJob, JobsReport

DEMO_ACTIONS = [9, 14, 12]  # WR, ADA, LRL: a forward-turn, a strafe and a turn episode


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
        default=None,
        help="worldmark action ids, e.g. 9,14,12 or 1-15 (default: 9,14,12 = WR, ADA, LRL); "
        "with --cases, the cases of these actions",
    )
    demo.add_argument(
        "--seconds-per-key",
        type=ranged(SECONDS_PER_KEY),
        default=20.0,
        help="video seconds per key (default 20)",
    )
    demo.add_argument("--seed", type=int, default=0, help="scene seed of the procedural world")
    memory_loop_options(demo)
    add_case_options(demo)
    add_evaluation_options(demo)
    add_output_options(demo, record=True)


def jobs(args: argparse.Namespace, report: JobsReport) -> list[EpisodeJob]:
    cases = case_selection(args)
    if cases is not None:  # the procedural world on each case, started from its image
        return demo_case_jobs(
            args.out,
            cases.load(),
            defect=args.defect,
            world_seed=args.seed,
            seed=cases.seed,
            seconds_per_key=args.seconds_per_key,
            loops=loop_plan(args),
            record=args.record,
            selection=cases.record(),
        )
    if args.suite == SOAK_SUITE:
        raise BadInputError("--suite soak", "needs a served model (attach URL): the demo "
                            "world is stepped in process, it plays no stream")  # fmt: skip
    return demo_jobs(
        args.out,
        defect=args.defect,
        seed=args.seed,
        actions=args.actions or DEMO_ACTIONS,
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

"""``streameval demo``: the procedural world model, evaluated live (the embedded default)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from streameval.cli.evaluate import run_spec, spec_of, stop_rule
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
from streameval.inputs.numbers import SECONDS_PER_KEY
from streameval.runs.spec import DemoWorld, Drive, RunSpec


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


def spec(args: argparse.Namespace) -> RunSpec:
    """``demo``'s run: the procedural world (``--defect``, ``--seed``) on the suite or the
    cases asked for."""
    return spec_of(
        args,
        model=DemoWorld(args.defect, args.seed),
        drive=Drive(
            suite=args.suite,
            actions=None if args.actions is None else tuple(args.actions),
            loops=loop_plan(args),
            seconds_per_key=args.seconds_per_key,
            soak_minutes=args.minutes,
            cases=case_selection(args),
        ),
        record=args.record,
        repeat=args.repeat,
        claim=args.claim,
        stop_when=stop_rule(args),
    )


def run(args: argparse.Namespace) -> int:
    if args.list_defects:
        from streameval.worlds.procedural_world import DEFECT_PRESETS

        print("\n".join(DEFECT_PRESETS))
        return EXIT_OK
    return run_spec(args, spec(args))

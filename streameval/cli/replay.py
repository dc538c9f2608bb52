"""``streameval replay ROLLOUT...``: score recorded rollouts through the live pipeline, at a
fixed rate or flat out (``--ray``: over a cluster)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from streameval.cli.evaluate import run_spec, spec_of
from streameval.cli.options import add_evaluation_options, add_output_options, ranged
from streameval.cli.ray import add_ray_options, ray_batch
from streameval.inputs.numbers import FPS
from streameval.runs.spec import Rollouts, RunSpec


def add_parser(sub: Any) -> None:
    replay = sub.add_parser("replay", help="score recorded rollouts")
    replay.add_argument(
        "rollouts", nargs="+", type=Path, help="rollout directories, deliveries or folders of them"
    )
    replay.add_argument(
        "--out", type=Path, required=True, help="results directory (OUT/<model>/<episode>/)"
    )
    pace = replay.add_mutually_exclusive_group()
    pace.add_argument("--realtime", action="store_true", help="pace at each rollout's fps")
    pace.add_argument("--fps", type=ranged(FPS), default=None, help="pace at N frames per second")
    add_evaluation_options(replay)
    add_output_options(replay, record=False)
    add_ray_options(replay, gpus=True)


def spec(args: argparse.Namespace) -> RunSpec:
    """``replay``'s run: the rollouts, paced as asked, here or on Ray (``--ray``)."""
    return spec_of(
        args,
        rollouts=Rollouts(tuple(args.rollouts), args.fps, args.realtime),
        ray=ray_batch(args),
    )


def run(args: argparse.Namespace) -> int:
    return run_spec(args, spec(args))

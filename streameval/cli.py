"""Command line: ``streameval demo | attach | replay | rescore | table`` (DESIGN §6).

Exit status 0 on success, 2 on bad input (one line naming the input), 1 otherwise. Several
inputs in one command: each is tried; the bad ones are reported and the rest still scored.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from streameval import __version__
from streameval.errors import BackendUnavailableError, BadInputError
from streameval.jobs import EpisodeJob, JobsReport, run_jobs
from streameval.observers import EpisodeObserver, EpisodeOutcome
from streameval.pipeline import PipelineConfig
from streameval.progress import ProgressPrinter
from streameval.protocol.memory_loop import MEMORY_LOOP_FPS, MemoryLoop
from streameval.registry import UnknownBackendError

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2


def _parse_actions(text: str) -> list[int]:
    from streameval.protocol.suites import WORLDMARK

    ids: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                lo, hi = part.split("-", 1)
                ids.extend(range(int(lo), int(hi) + 1))
            elif part:
                ids.append(int(part))
    except ValueError:
        ids = []
    if not ids or any(i not in WORLDMARK for i in ids):
        raise argparse.ArgumentTypeError(f"worldmark action ids are 1–15, got {text!r}")
    return ids


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streameval",
        description="Streaming, real-time evaluator for live world-model rollouts.",
    )
    parser.add_argument("--version", action="version", version=f"streameval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--no-tui", action="store_true", help="plain progress lines instead of the dashboard"
        )
        p.add_argument("--flow", default="dis-fast", help="flow backend (default: dis-fast)")
        p.add_argument(
            "--embedding",
            default="cpu-colorhist-rbf",
            help="appearance backend for memory: cpu-colorhist-rbf (default, no weights) or "
            "dinov2-base[:MODEL_DIR_OR_HUB_ID] (weights from a local path or the HF cache)",
        )
        p.add_argument(
            "--depth",
            default=None,
            help="depth network for the strafe/turn fit when frames carry no depth: "
            "depth-anything[:MODEL_DIR_OR_HUB_ID] (weights from a local path or the HF "
            "cache); default: none, "
            "the depth-free estimator",
        )
        p.add_argument(
            "--cuts",
            default="auto",
            help="shot-cut detector: auto (TransNetV2 when installed, else "
            "scenedetect-adaptive), transnetv2, scenedetect-adaptive, scenedetect-content",
        )

    demo = sub.add_parser("demo", help="procedural world model, evaluated live")
    demo.add_argument("--out", type=Path, default=Path("results/demo"), help="results directory")
    demo.add_argument("--defect", default="clean", help="inject a defect (see --list-defects)")
    demo.add_argument("--list-defects", action="store_true", help="list defect presets and exit")
    demo.add_argument(
        "--actions",
        type=_parse_actions,
        default=[9, 14, 12],
        help="worldmark action ids, e.g. 9,14,12 or 1-15 (default: 9,14,12 = WR, ADA, LRL)",
    )
    demo.add_argument(
        "--seconds-per-key", type=float, default=20.0, help="video seconds per key (default 20)"
    )
    demo.add_argument("--seed", type=int, default=0, help="scene seed of the procedural world")
    memory_loop_options(demo)
    common(demo)

    attach = sub.add_parser("attach", help="attach to a model and drive the protocol")
    attach.add_argument("url", help="python:MODULE:FACTORY (an in-process model)")
    attach.add_argument("--out", type=Path, required=True)
    memory_loop_options(attach)
    attach.add_argument("--actions", type=_parse_actions, default=list(range(1, 16)))
    attach.add_argument("--seconds-per-key", type=float, default=20.0)
    attach.add_argument("--fps", type=float, default=None, help="model fps (default: model.fps)")
    common(attach)

    replay = sub.add_parser("replay", help="score recorded rollouts")
    replay.add_argument("rollouts", nargs="+", type=Path)
    replay.add_argument("--out", type=Path, required=True)
    pace = replay.add_mutually_exclusive_group()
    pace.add_argument("--realtime", action="store_true", help="pace at each rollout's fps")
    pace.add_argument("--fps", type=float, default=None, help="pace at N frames per second")
    common(replay)

    rescore = sub.add_parser("rescore", help="recompute scores from episode caches")
    rescore.add_argument("results", nargs="+", type=Path)

    from streameval.table_cli import add_table_parser

    add_table_parser(sub)
    return parser


# One push_in token of a memory_loop in the procedural world, metres (its pose unit).
LOOP_STEP_M = 2.0


def memory_loop_options(p: argparse.ArgumentParser) -> None:
    from streameval.protocol.memory_loop import TRAJECTORIES

    p.add_argument("--suite", default="worldmark", choices=["worldmark", "memory_loop"])
    p.add_argument(
        "--trajectory",
        action="append",
        choices=list(TRAJECTORIES),
        help="memory_loop trajectory (repeatable; default: all six)",
    )
    p.add_argument(
        "--loop-seconds", type=float, default=60.0, help="memory_loop episode length (default 60)"
    )


def memory_loops(args: argparse.Namespace, fps: float) -> list[MemoryLoop]:
    """The memory_loop trajectories asked for (SPEC §1)."""
    from streameval.protocol.memory_loop import TRAJECTORIES, memory_loop

    if args.loop_seconds <= 0:
        raise BadInputError("--loop-seconds", f"must be > 0, got {args.loop_seconds}")
    names = args.trajectory or list(TRAJECTORIES)
    return [memory_loop(name, fps=fps, seconds=args.loop_seconds) for name in names]


class ResultsLog(EpisodeObserver):
    """Appends one JSON line per finished episode to ``results.jsonl`` (STYLE: JSONL)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def on_end(self, outcome: EpisodeOutcome) -> None:
        line = {
            "episode": outcome.info.episode,
            "model": outcome.info.model,
            "complete": outcome.complete,
            "frames": outcome.frames,
            "results_dir": str(outcome.results_dir) if outcome.results_dir else None,
            "metrics": {k: m.normalized for k, m in outcome.scores.metrics.items()},
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps(line) + "\n")


def _demo_jobs(args: argparse.Namespace) -> list[EpisodeJob]:
    from streameval.driver import InProcessSource
    from streameval.protocol.schedule import Schedule
    from streameval.protocol.suites import worldmark_keys
    from streameval.recording import RecordingObserver
    from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect
    from streameval.worlds.procedural_world.config import WorldConfig

    try:
        world_config = world_config_for_defect(args.defect, seed=args.seed)
    except ValueError as exc:
        raise BadInputError("--defect", str(exc)) from None
    jobs: list[EpisodeJob] = []
    if args.suite == "memory_loop":
        for loop in memory_loops(args, MEMORY_LOOP_FPS):
            # One pan token turns 30 degrees and one push token moves one step (SPEC §1).
            config = replace(
                world_config,
                fps=loop.fps,
                yaw_rate_deg=loop.yaw_rate_deg,
                forward_speed=loop.speed(LOOP_STEP_M),
            )

            def open_loop(loop: MemoryLoop = loop, config: WorldConfig = config) -> InProcessSource:
                world = ProceduralWorld(config)
                return InProcessSource(
                    world,
                    loop.schedule(),
                    episode=loop.name,
                    model_name=f"procedural-world[{args.defect}]",
                    suite="memory_loop",
                    width=world.width,
                    height=world.height,
                    trajectory=loop.name,
                )

            results_dir = args.out / loop.name
            jobs.append(
                EpisodeJob(
                    loop.name,
                    open_loop,
                    results_dir,
                    [RecordingObserver(results_dir / "recording")],
                )
            )
        return jobs
    for action in args.actions:
        keys = worldmark_keys(action)
        episode = f"{action:03d}_{''.join(keys)}"

        def open_source(keys: tuple[str, ...] = keys, episode: str = episode) -> InProcessSource:
            world = ProceduralWorld(world_config)
            schedule = Schedule.per_key(keys, args.seconds_per_key, world.fps)
            return InProcessSource(
                world,
                schedule,
                episode=episode,
                model_name=f"procedural-world[{args.defect}]",
                suite="worldmark",
                width=world.width,
                height=world.height,
            )

        results_dir = args.out / episode
        jobs.append(
            EpisodeJob(
                episode, open_source, results_dir, [RecordingObserver(results_dir / "recording")]
            )
        )
    return jobs


def _attach_jobs(args: argparse.Namespace) -> list[EpisodeJob]:
    from streameval.attach import load_python_model
    from streameval.driver import InProcessSource
    from streameval.protocol.schedule import Schedule
    from streameval.protocol.suites import worldmark_keys
    from streameval.recording import RecordingObserver

    model, name = load_python_model(args.url)
    fps = args.fps or float(getattr(model, "fps", 16.0))
    jobs: list[EpisodeJob] = []
    if args.suite == "memory_loop":
        for loop in memory_loops(args, args.fps or MEMORY_LOOP_FPS):

            def open_loop(loop: MemoryLoop = loop) -> InProcessSource:
                if callable(getattr(model, "reset", None)):
                    model.reset()
                return InProcessSource(
                    model,
                    loop.schedule(),
                    episode=loop.name,
                    model_name=name,
                    suite="memory_loop",
                    width=getattr(model, "width", None),
                    height=getattr(model, "height", None),
                    trajectory=loop.name,
                )

            results_dir = args.out / loop.name
            jobs.append(
                EpisodeJob(
                    loop.name,
                    open_loop,
                    results_dir,
                    [RecordingObserver(results_dir / "recording")],
                )
            )
        return jobs
    for action in args.actions:
        keys = worldmark_keys(action)
        episode = f"{action:03d}_{''.join(keys)}"

        def open_source(keys: tuple[str, ...] = keys, episode: str = episode) -> InProcessSource:
            if callable(getattr(model, "reset", None)):
                model.reset()
            return InProcessSource(
                model,
                Schedule.per_key(keys, args.seconds_per_key, fps),
                episode=episode,
                model_name=name,
                suite=args.suite,
                width=getattr(model, "width", None),
                height=getattr(model, "height", None),
            )

        results_dir = args.out / episode
        jobs.append(
            EpisodeJob(
                episode, open_source, results_dir, [RecordingObserver(results_dir / "recording")]
            )
        )
    return jobs


def _replay_jobs(args: argparse.Namespace, report: JobsReport) -> list[EpisodeJob]:
    from streameval.replay import ReplaySource, open_rollouts
    from streameval.replay.rollout import Rollout

    rollouts, errors = open_rollouts(args.rollouts)
    report.bad_input.extend(str(e) for e in errors)
    jobs: list[EpisodeJob] = []
    for rollout in rollouts:
        pace = rollout.fps if args.realtime else args.fps

        def open_source(rollout: Rollout = rollout, pace: float | None = pace) -> ReplaySource:
            return ReplaySource(rollout, pace=pace)

        jobs.append(EpisodeJob(rollout.episode, open_source, args.out / rollout.episode))
    return jobs


def _use_dashboard(args: argparse.Namespace) -> bool:
    return not args.no_tui and sys.stdout.isatty() and sys.stdin.isatty()


def _run_episodes(args: argparse.Namespace) -> int:
    report = JobsReport()
    if args.command == "demo":
        jobs = _demo_jobs(args)
    elif args.command == "attach":
        jobs = _attach_jobs(args)
    else:
        jobs = _replay_jobs(args, report)
    for message in report.bad_input:
        print(f"error: {message}", file=sys.stderr)
    config = PipelineConfig(
        flow=args.flow, embedding=args.embedding, cuts=args.cuts, depth=args.depth
    )
    results_log = ResultsLog(args.out / "results.jsonl")
    if _use_dashboard(args):
        from streameval.tui import run_dashboard

        run_report = run_dashboard(jobs, config, [results_log])
    else:
        run_report = asyncio.run(run_jobs(jobs, config, [ProgressPrinter(), results_log]))
    for message in run_report.bad_input:
        print(f"error: {message}", file=sys.stderr)
    incomplete = [o for o in run_report.outcomes if not o.complete]
    for outcome in incomplete:
        for message in outcome.errors or [f"{outcome.info.episode}: episode incomplete"]:
            print(f"error: {message}", file=sys.stderr)
    if report.bad_input or run_report.bad_input or incomplete:
        return EXIT_BAD_INPUT
    return EXIT_OK


def _run_rescore(args: argparse.Namespace) -> int:
    from streameval.rescore import find_results_dirs, rescore_dir

    status = EXIT_OK
    for path in args.results:
        try:
            dirs = find_results_dirs(path)
        except BadInputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = EXIT_BAD_INPUT
            continue
        for d in dirs:
            try:
                outcome = rescore_dir(d)
            except BadInputError as exc:
                print(f"error: {exc}", file=sys.stderr)
                status = EXIT_BAD_INPUT
                continue
            what = "unchanged" if not outcome.changed else "changed: " + ", ".join(outcome.changed)
            print(f"rescored {d} ({what})")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "rescore":
            return _run_rescore(args)
        if args.command == "table":
            from streameval.table_cli import run_table

            return run_table(args)
        if args.command == "demo" and args.list_defects:
            from streameval.worlds.procedural_world import DEFECT_PRESETS

            print("\n".join(DEFECT_PRESETS))
            return EXIT_OK
        return _run_episodes(args)
    except (BadInputError, UnknownBackendError, BackendUnavailableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted: episodes in progress were finalized as incomplete", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())

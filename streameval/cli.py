"""Command line: ``streameval demo | attach | replay | rescore`` (DESIGN §6).

Exit status 0 on success, 2 on bad input (one line naming the input), 1 otherwise. Several
inputs in one command: each is tried; the bad ones are reported and the rest still scored.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from streameval import __version__
from streameval.errors import BadInputError
from streameval.observers import EpisodeObserver, EpisodeOutcome
from streameval.pipeline import PipelineConfig, run_episode
from streameval.progress import ProgressPrinter
from streameval.registry import UnknownBackendError

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2


def _parse_actions(text: str) -> list[int]:
    from protocol.suites import WORLDMARK

    ids: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = part.split("-", 1)
            ids.extend(range(int(lo), int(hi) + 1))
        elif part:
            ids.append(int(part))
    bad = [i for i in ids if i not in WORLDMARK]
    if bad or not ids:
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
        p.add_argument("--no-tui", action="store_true", help="plain progress lines (scripts, CI)")
        p.add_argument("--flow", default="dis-fast", help="flow backend (default: dis-fast)")

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
    demo.add_argument("--seed", type=int, default=0)
    common(demo)

    attach = sub.add_parser("attach", help="attach to a model and drive the protocol")
    attach.add_argument("url", help="python:MODULE:FACTORY (an in-process model)")
    attach.add_argument("--out", type=Path, required=True)
    attach.add_argument("--suite", default="worldmark", choices=["worldmark"])
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


class _ResultsLog(EpisodeObserver):
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


def _observers(args: argparse.Namespace, out: Path) -> list[EpisodeObserver]:
    return [ProgressPrinter(), _ResultsLog(out / "results.jsonl")]


async def _run_demo(args: argparse.Namespace) -> int:
    from examples.procedural_world import DEFECT_PRESETS, ProceduralWorld, world_config_for_defect
    from protocol.schedule import Schedule
    from protocol.suites import worldmark_keys
    from streameval.driver import InProcessSource
    from streameval.recording import RecordingObserver

    if args.list_defects:
        for name in DEFECT_PRESETS:
            print(name)
        return EXIT_OK
    try:
        world_config = world_config_for_defect(args.defect, seed=args.seed)
    except ValueError as exc:
        raise BadInputError("--defect", str(exc)) from None
    config = PipelineConfig(flow=args.flow)
    for action in args.actions:
        keys = worldmark_keys(action)
        world = ProceduralWorld(world_config)
        schedule = Schedule.per_key(keys, args.seconds_per_key, world.fps)
        episode = f"{action:03d}_{''.join(keys)}"
        model_name = f"procedural-world[{args.defect}]"
        results_dir = args.out / episode
        source = InProcessSource(
            world,
            schedule,
            episode=episode,
            model_name=model_name,
            suite="worldmark",
            width=world.width,
            height=world.height,
        )
        observers = [*_observers(args, args.out), RecordingObserver(results_dir / "recording")]
        await run_episode(source, config=config, results_dir=results_dir, observers=observers)
    return EXIT_OK


async def _run_attach(args: argparse.Namespace) -> int:
    from protocol.schedule import Schedule
    from protocol.suites import worldmark_keys
    from streameval.attach import load_python_model
    from streameval.driver import InProcessSource
    from streameval.recording import RecordingObserver

    model, name = load_python_model(args.url)
    fps = args.fps or float(getattr(model, "fps", 16.0))
    config = PipelineConfig(flow=args.flow)
    for action in args.actions:
        keys = worldmark_keys(action)
        schedule = Schedule.per_key(keys, args.seconds_per_key, fps)
        episode = f"{action:03d}_{''.join(keys)}"
        if hasattr(model, "reset"):
            model.reset()
        results_dir = args.out / episode
        source = InProcessSource(
            model,
            schedule,
            episode=episode,
            model_name=name,
            suite=args.suite,
            width=getattr(model, "width", None),
            height=getattr(model, "height", None),
        )
        observers = [*_observers(args, args.out), RecordingObserver(results_dir / "recording")]
        await run_episode(source, config=config, results_dir=results_dir, observers=observers)
    return EXIT_OK


async def _run_replay(args: argparse.Namespace) -> int:
    from replay import ReplaySource, open_rollouts

    rollouts, errors = open_rollouts(args.rollouts)
    for err in errors:
        print(f"error: {err}", file=sys.stderr)
    config = PipelineConfig(flow=args.flow)
    status = EXIT_BAD_INPUT if errors else EXIT_OK
    for rollout in rollouts:
        pace = rollout.fps if args.realtime else args.fps
        source = ReplaySource(rollout, pace=pace)
        results_dir = args.out / rollout.episode
        outcome = await run_episode(
            source, config=config, results_dir=results_dir, observers=_observers(args, args.out)
        )
        if not outcome.complete:
            for message in outcome.errors or [f"{rollout.path}: episode incomplete"]:
                print(f"error: {message}", file=sys.stderr)
            status = EXIT_BAD_INPUT
    return status


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
        runner = {"demo": _run_demo, "attach": _run_attach, "replay": _run_replay}[args.command]
        return asyncio.run(runner(args))
    except BadInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except UnknownBackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted: episodes in progress were finalized as incomplete", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())

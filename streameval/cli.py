"""Command line: ``streameval demo | attach | replay | rescore | table`` (DESIGN §6).

Exit status 0 on success, 2 on bad input (one line naming the input), 1 otherwise. Several
inputs in one command: each is tried; the bad ones are reported and the rest still scored.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from streameval import __version__
from streameval.attach import load_python_model, model_fps
from streameval.errors import BackendUnavailableError, BadInputError
from streameval.inputs.numbers import (
    FPS,
    FRAME_SIDE,
    SECONDS_PER_KEY,
    STEP_TIMEOUT,
    Range,
    check_frame_count,
)
from streameval.inputs.paths import check_output_dir, path_under
from streameval.interrupts import cancel_on_sigterm
from streameval.jobs import EpisodeJob, JobsReport, run_jobs
from streameval.model_thread import DEFAULT_STEP_TIMEOUT_S, ModelHealth
from streameval.observers import EpisodeObserver, EpisodeOutcome
from streameval.pipeline import PipelineConfig
from streameval.progress import ProgressPrinter
from streameval.registry import UnknownBackendError
from streameval.scale.commands import add_ray_options, check_ray_usage, split_ray_flag

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2


def _parse_actions(text: str) -> list[int]:
    from streameval.protocol.suites import WORLDMARK

    ids: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                lo, hi = part.split("-", 1)
                first, last = int(lo), int(hi)
                if not (min(WORLDMARK) <= first <= last <= max(WORLDMARK)):
                    raise ValueError(part)  # checked before expanding: "1-10**18" stays cheap
                ids.extend(range(first, last + 1))
            elif part:
                ids.append(int(part))
    except ValueError:
        ids = []
    if not ids or any(i not in WORLDMARK for i in ids):
        raise argparse.ArgumentTypeError(f"worldmark action ids are 1–15, got {text!r}")
    return ids


def _ranged(bound: Range) -> Callable[[str], float]:
    """An argparse type: a finite number inside ``bound`` (NaN, inf, 0 and -1 are refused)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        try:
            return bound.check(value, text)
        except BadInputError as exc:
            raise argparse.ArgumentTypeError(exc.problem) from None

    return parse


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes are one line naming the argument (DESIGN §6), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"error: {self.prog}: {' '.join(message.split())}\n")


def quality_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--quality",
        default=None,
        help="Q-Align (OneAlign) for perceptual/aesthetic quality at episode end: "
        "qalign[:MODEL_DIR_OR_HUB_ID] (weights from a local path or the HF cache, default "
        "q-future/one-align); default: none, the two columns are not_applicable",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="streameval",
        description="Streaming, real-time evaluator for live world-model rollouts.",
    )
    parser.add_argument("--version", action="version", version=f"streameval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

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
        quality_option(p)
        p.add_argument(
            "--publish-mqtt",
            default=None,
            metavar="URL",
            help="publish live scores on mqtt://HOST:PORT/SESSION (streameval/SESSION/scores) "
            "for `streameval dashboard --mqtt` elsewhere",
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
        "--seconds-per-key",
        type=_ranged(SECONDS_PER_KEY),
        default=20.0,
        help="video seconds per key (default 20)",
    )
    demo.add_argument("--seed", type=int, default=0, help="scene seed of the procedural world")
    common(demo)

    attach = sub.add_parser("attach", help="attach to a model and drive the protocol")
    attach.add_argument(
        "url",
        help="python:MODULE:FACTORY, webrtc+http://HOST:PORT/PATH, "
        "mjpeg+http://HOST:PORT/PATH, mqtt[s]://[USER:PASS@]HOST:PORT/SESSION",
    )
    attach.add_argument("--out", type=Path, required=True)
    attach.add_argument("--suite", default="worldmark", choices=["worldmark"])
    attach.add_argument("--actions", type=_parse_actions, default=list(range(1, 16)))
    attach.add_argument("--seconds-per-key", type=_ranged(SECONDS_PER_KEY), default=20.0)
    attach.add_argument(
        "--fps", type=_ranged(FPS), default=None, help="model fps (default: model.fps)"
    )
    attach.add_argument(
        "--step-timeout",
        type=_ranged(STEP_TIMEOUT),
        default=DEFAULT_STEP_TIMEOUT_S,
        help="seconds a model call (factory, reset, step) may take before the episode is "
        f"ended as incomplete (default {DEFAULT_STEP_TIMEOUT_S:g})",
    )
    from streameval.transport_cli import (
        add_attach_network_args,
        add_dashboard_parser,
        add_serve_parser,
    )

    add_attach_network_args(attach)
    common(attach)
    add_serve_parser(sub)
    add_dashboard_parser(sub)

    replay = sub.add_parser("replay", help="score recorded rollouts")
    replay.add_argument("rollouts", nargs="+", type=Path)
    replay.add_argument("--out", type=Path, required=True)
    pace = replay.add_mutually_exclusive_group()
    pace.add_argument("--realtime", action="store_true", help="pace at each rollout's fps")
    pace.add_argument("--fps", type=_ranged(FPS), default=None, help="pace at N frames per second")
    common(replay)
    add_ray_options(replay, gpus=True)

    rescore = sub.add_parser("rescore", help="recompute scores from episode caches")
    rescore.add_argument("results", nargs="+", type=Path)
    quality_option(rescore)
    add_ray_options(rescore, gpus=False)

    from streameval.table_cli import add_table_parser

    add_table_parser(sub)
    from streameval.scale.pool_cli import add_pool_parser

    add_pool_parser(sub, common)
    return parser


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
        # One write(2) with O_APPEND: a kill at any moment leaves whole lines only.
        data = (json.dumps(line) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


def _demo_jobs(args: argparse.Namespace) -> list[EpisodeJob]:
    from streameval.driver import InProcessSource
    from streameval.protocol.schedule import Schedule
    from streameval.protocol.suites import worldmark_keys
    from streameval.recording import RecordingObserver
    from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

    try:
        world_config = world_config_for_defect(args.defect, seed=args.seed)
    except ValueError as exc:
        raise BadInputError("--defect", str(exc)) from None
    jobs: list[EpisodeJob] = []
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
    from streameval.driver import InProcessSource
    from streameval.protocol.schedule import Schedule
    from streameval.protocol.suites import worldmark_keys
    from streameval.recording import RecordingObserver
    from streameval.transports.urls import is_network_url

    if is_network_url(args.url):
        from streameval.transport_cli import network_attach_jobs

        return network_attach_jobs(args)
    model, name = load_python_model(args.url, args.step_timeout)
    fps = model_fps(model, args.fps, args.url)
    health = ModelHealth()
    jobs: list[EpisodeJob] = []
    for action in args.actions:
        keys = worldmark_keys(action)
        episode = f"{action:03d}_{''.join(keys)}"
        schedule = Schedule.per_key(keys, args.seconds_per_key, fps)
        check_frame_count(schedule.total_frames, "--fps × --seconds-per-key")

        def open_source(schedule: Schedule = schedule, episode: str = episode) -> InProcessSource:
            if health.hung is not None:  # its thread may still be inside the model
                raise BadInputError(args.url, f"not driven again: {health.hung}")
            return InProcessSource(
                model,
                schedule,
                episode=episode,
                model_name=name,
                suite=args.suite,
                width=_model_size(model, "width"),
                height=_model_size(model, "height"),
                step_timeout=args.step_timeout,
                reset=callable(getattr(model, "reset", None)),
                health=health,
            )

        results_dir = path_under(args.out, episode)
        jobs.append(
            EpisodeJob(
                episode, open_source, results_dir, [RecordingObserver(results_dir / "recording")]
            )
        )
    return jobs


def _model_size(model: object, name: str) -> int | None:
    """``model.width``/``height`` when it is a plausible frame side; otherwise the first frame
    sets the size (a declared size is only a hint, the frames are checked either way)."""
    value = getattr(model, name, None)
    if isinstance(value, int) and not isinstance(value, bool):
        return value if FRAME_SIDE.low <= value <= FRAME_SIDE.high else None
    return None


def _replay_jobs(args: argparse.Namespace, report: JobsReport) -> list[EpisodeJob]:
    from streameval.replay import ReplaySource, open_rollouts
    from streameval.replay.rollout import Rollout
    from streameval.scale.tasks import ReplayTask

    rollouts, errors = open_rollouts(args.rollouts)
    report.bad_input.extend(str(e) for e in errors)
    jobs: list[EpisodeJob] = []
    for rollout in rollouts:
        pace = rollout.fps if args.realtime else args.fps
        try:
            results_dir = path_under(args.out, rollout.episode)
        except BadInputError as exc:
            report.bad_input.append(f"{rollout.path}: episode {rollout.episode!r}: {exc.problem}")
            continue

        def open_source(rollout: Rollout = rollout, pace: float | None = pace) -> ReplaySource:
            return ReplaySource(rollout, pace=pace)

        task = ReplayTask(rollout.episode, rollout.path, results_dir, pace)
        jobs.append(EpisodeJob(rollout.episode, open_source, results_dir, task=task))
    return jobs


def _use_dashboard(args: argparse.Namespace) -> bool:
    return not args.no_tui and sys.stdout.isatty() and sys.stdin.isatty()


def _run_episodes(args: argparse.Namespace) -> int:
    check_output_dir(args.out)  # before a model is built or a video decoded
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
        flow=args.flow,
        embedding=args.embedding,
        cuts=args.cuts,
        depth=args.depth,
        quality=args.quality,
    )
    results_log = ResultsLog(args.out / "results.jsonl")
    if getattr(args, "ray", None) is not None:
        from streameval.scale.commands import run_ray_replay

        if getattr(args, "publish_mqtt", None):
            raise BadInputError("--publish-mqtt", "not with --ray (scores are in --out)")
        return run_ray_replay(args, jobs, config, [results_log], len(report.bad_input))
    extra: list[EpisodeObserver] = []
    publisher = None
    if args.publish_mqtt:
        from streameval.transports.scores_publisher import MqttScoresPublisher

        publisher = MqttScoresPublisher(args.publish_mqtt)
        extra.append(publisher)
    if _use_dashboard(args):
        from streameval.tui import run_dashboard

        run_report = run_dashboard(jobs, config, [results_log, *extra])
    else:

        async def run_all() -> JobsReport:
            report = await run_jobs(jobs, config, [ProgressPrinter(), results_log, *extra])
            if publisher is not None:
                await publisher.close()
            return report

        run_report = asyncio.run(cancel_on_sigterm(run_all()))
    for message in run_report.bad_input:
        print(f"error: {message}", file=sys.stderr)
    incomplete = [o for o in run_report.outcomes if not o.complete]
    for outcome in incomplete:
        messages = [e.message for e in outcome.errors]
        for message in messages or [f"{outcome.info.episode}: episode incomplete"]:
            print(f"error: {message}", file=sys.stderr)
    if report.bad_input or run_report.bad_input or incomplete:
        return EXIT_BAD_INPUT
    return EXIT_OK


def _run_rescore(args: argparse.Namespace) -> int:
    from streameval.rescore import find_results_dirs, rescore_dir

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


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(split_ray_flag(sys.argv[1:] if argv is None else argv))
    try:
        check_ray_usage(args)
        if args.command == "rescore" and args.ray is not None:
            from streameval.scale.commands import run_ray_rescore

            return run_ray_rescore(args)
        if args.command == "rescore":
            return _run_rescore(args)
        if args.command == "table":
            from streameval.table_cli import run_table

            return run_table(args)
        if args.command == "pool":
            from streameval.scale.pool_cli import run_pool

            return run_pool(args)
        if args.command == "serve":
            from streameval.transport_cli import run_serve

            return run_serve(args)
        if args.command == "dashboard":
            from streameval.transport_cli import run_dashboard_mqtt

            return run_dashboard_mqtt(args)
        if args.command == "demo" and args.list_defects:
            from streameval.worlds.procedural_world import DEFECT_PRESETS

            print("\n".join(DEFECT_PRESETS))
            return EXIT_OK
        return _run_episodes(args)
    except (BadInputError, UnknownBackendError, BackendUnavailableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:  # the disk, not an input: one line, exit 1, never a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILURE
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("interrupted: episodes in progress were finalized as incomplete", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())

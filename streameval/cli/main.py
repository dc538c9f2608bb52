"""Command line: ``streameval demo | attach | replay | rescore | table`` (DESIGN §6).

Exit status 0 on success, 2 on bad input (one line naming the input), 130 when the user
stopped the run (``q`` in the dashboard, Ctrl-C), 1 otherwise. Several inputs in one command:
each is tried; the bad ones are reported and the rest still scored.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from streameval import __version__
from streameval.cli.console import ProgressPrinter
from streameval.cli.exit_codes import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    exit_status,
)
from streameval.cli.options import (
    add_output_options,
    add_verbosity_options,
    configure_logging,
    existing_policy,
    loop_plan,
    memory_loop_options,
)
from streameval.cli.ray import add_ray_options, check_ray_usage, split_ray_flag
from streameval.core.observers import EpisodeObserver
from streameval.core.registry import load_target
from streameval.engine.config import PipelineConfig
from streameval.errors import BadInputError
from streameval.inputs.numbers import (
    FPS,
    SECONDS_PER_KEY,
    STEP_TIMEOUT,
    Range,
)
from streameval.inputs.paths import check_output_dir
from streameval.results.results_log import RESULTS_LOG, ResultsLog
from streameval.runs.builders import demo_jobs, model_jobs, rollout_jobs
from streameval.runs.existing import apply_existing_policy
from streameval.runs.interrupts import cancel_on_sigterm
from streameval.runs.jobs import EpisodeJob, JobsReport, run_jobs
from streameval.runs.python_model import load_python_model
from streameval.transports.inprocess.model_thread import DEFAULT_STEP_TIMEOUT_S


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
        p.add_argument(
            "--flow",
            default="dis-fast",
            help="optical flow: dis-fast (default, CPU), dis-medium, dis-ultrafast, "
            "raft[:WEIGHTS.pth] / raft-small[:WEIGHTS.pth] (torchvision's RAFT weights, default "
            "file from the torch hub cache) or sea-raft:CHECKOUT_DIR (the reference's SEA-RAFT "
            "from a local checkout and its Spring-M weights); CUDA when available",
        )
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
        add_verbosity_options(p)

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
    memory_loop_options(demo)
    common(demo)
    add_output_options(demo, record=True)

    attach = sub.add_parser("attach", help="attach to a model and drive the protocol")
    attach.add_argument(
        "url",
        help="python:MODULE:FACTORY (an in-process model; see docs/evaluate-your-model.md), "
        "webrtc+http://HOST:PORT/PATH, mjpeg+http://HOST:PORT/PATH, "
        "mqtt[s]://[USER:PASS@]HOST:PORT/SESSION",
    )
    attach.add_argument(
        "--out", type=Path, required=True, help="results directory (OUT/<model>/<episode>/)"
    )
    memory_loop_options(attach)
    attach.add_argument(
        "--actions",
        type=_parse_actions,
        default=list(range(1, 16)),
        help="worldmark action ids, e.g. 9,14,12 or 1-15 (default: all 15)",
    )
    attach.add_argument(
        "--seconds-per-key",
        type=_ranged(SECONDS_PER_KEY),
        default=20.0,
        help="video seconds per key (default 20)",
    )
    attach.add_argument(
        "--fps", type=_ranged(FPS), default=None, help="model fps (default: model.fps)"
    )
    attach.add_argument(
        "--model-name",
        default=None,
        help="name of the model in results and tables (default: the factory's name)",
    )
    attach.add_argument(
        "--app-dir",
        type=Path,
        default=Path("."),
        help="folder searched first for MODULE (default: the working directory)",
    )
    attach.add_argument(
        "--step-timeout",
        type=_ranged(STEP_TIMEOUT),
        default=DEFAULT_STEP_TIMEOUT_S,
        help="seconds a model call (factory, reset, step) may take before the episode is "
        f"ended as incomplete (default {DEFAULT_STEP_TIMEOUT_S:g})",
    )
    from streameval.cli.network import (
        add_attach_network_args,
        add_dashboard_parser,
        add_serve_parser,
    )

    add_attach_network_args(attach)
    common(attach)
    add_output_options(attach, record=True)
    add_serve_parser(sub)
    add_dashboard_parser(sub)

    replay = sub.add_parser("replay", help="score recorded rollouts")
    replay.add_argument(
        "rollouts", nargs="+", type=Path, help="rollout directories, deliveries or folders of them"
    )
    replay.add_argument(
        "--out", type=Path, required=True, help="results directory (OUT/<model>/<episode>/)"
    )
    pace = replay.add_mutually_exclusive_group()
    pace.add_argument("--realtime", action="store_true", help="pace at each rollout's fps")
    pace.add_argument("--fps", type=_ranged(FPS), default=None, help="pace at N frames per second")
    common(replay)
    add_output_options(replay, record=False)
    add_ray_options(replay, gpus=True)

    rescore = sub.add_parser("rescore", help="recompute scores from episode caches")
    rescore.add_argument("results", nargs="+", type=Path, help="results directories")
    quality_option(rescore)
    add_ray_options(rescore, gpus=False)

    from streameval.cli.report import add_report_parser
    from streameval.cli.table import add_table_parser

    add_table_parser(sub)
    add_report_parser(sub)
    from streameval.cli.pool import add_pool_parser

    add_pool_parser(sub, common)
    return parser


def _demo_jobs(args: argparse.Namespace) -> list[EpisodeJob]:
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


def _attach_jobs(args: argparse.Namespace) -> list[EpisodeJob]:
    from streameval.transports.urls import is_network_url

    if is_network_url(args.url):
        from streameval.cli.network import network_attach_jobs

        return network_attach_jobs(args)
    model, name = load_python_model(args.url, args.app_dir, args.step_timeout)
    return model_jobs(
        model,
        args.model_name or name,
        args.out,
        actions=args.actions,
        seconds_per_key=args.seconds_per_key,
        fps=args.fps,
        record=args.record,
        suite=args.suite,
        loops=loop_plan(args),
        step_timeout=args.step_timeout,
        origin=args.url,
    )


def _replay_jobs(args: argparse.Namespace, report: JobsReport) -> list[EpisodeJob]:
    return rollout_jobs(args.rollouts, args.out, report, fps=args.fps, realtime=args.realtime)


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
    jobs, skipped, kept = apply_existing_policy(jobs, existing_policy(args))
    report.bad_input.extend(kept)
    for message in [*report.bad_input, *report.input_problems]:
        print(f"error: {message}", file=sys.stderr)
    for message in skipped:
        print(message, file=sys.stderr)
    config = PipelineConfig(
        flow=args.flow,
        embedding=args.embedding,
        cuts=args.cuts,
        depth=args.depth,
        quality=args.quality,
    )
    results_log = ResultsLog(args.out / RESULTS_LOG)
    if getattr(args, "ray", None) is not None:
        from streameval.cli.ray import run_ray_replay

        if getattr(args, "publish_mqtt", None):
            raise BadInputError("--publish-mqtt", "not with --ray (scores are in --out)")
        bad = len(report.bad_input) + len(report.input_problems)
        return run_ray_replay(args, jobs, config, [results_log], bad)
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
        run_report = _run_plain(jobs, config, [results_log, *extra], args.quiet, publisher)
    return _finish(args, report, run_report, len(skipped))


def _run_plain(
    jobs: list[EpisodeJob],
    config: PipelineConfig,
    observers: list[EpisodeObserver],
    quiet: bool,
    publisher: Any = None,
) -> JobsReport:
    """Without the dashboard: progress bars in a terminal, plain lines otherwise (-q: none)."""

    async def run_all(shown: list[EpisodeObserver]) -> JobsReport:
        try:
            return await run_jobs(jobs, config, [*shown, *observers])
        finally:
            if publisher is not None:
                await publisher.close()

    if quiet:
        return asyncio.run(cancel_on_sigterm(run_all([])))
    if not sys.stdout.isatty():
        return asyncio.run(cancel_on_sigterm(run_all([ProgressPrinter()])))
    from streameval.cli.console import ProgressBars

    with ProgressBars(len(jobs)) as bars:
        return asyncio.run(cancel_on_sigterm(run_all([bars])))


def _finish(args: argparse.Namespace, report: JobsReport, run: JobsReport, skipped: int) -> int:
    """Report what went wrong, a one-line summary with the results path, and the exit code."""
    from streameval.report.writer import write_reports

    written = [o.results_dir for o in run.outcomes if o.results_dir is not None]
    if written:
        for warning in write_reports(written, args.out):
            print(f"warning: {warning}", file=sys.stderr)
    for message in run.bad_input:
        print(f"error: {message}", file=sys.stderr)
    incomplete = [o for o in run.outcomes if not o.complete]
    if not run.stopped:
        for outcome in incomplete:
            messages = [e.message for e in outcome.errors]
            for message in messages or [f"{outcome.info.episode}: episode incomplete"]:
                print(f"error: {message}", file=sys.stderr)
    complete = len(run.outcomes) - len(incomplete)
    failed = len(report.bad_input) + len(run.bad_input)
    parts = [f"{complete} complete", f"{len(incomplete)} incomplete"]
    parts += [f"{skipped} skipped"] if skipped else []
    parts += [f"{failed} not run (bad input)"] if failed else []
    if report.input_problems:
        parts += [f"{len(report.input_problems)} unusable sidecar(s) left out"]
    print(
        f"{', '.join(parts)}; results in {args.out}/ (open {args.out / 'index.html'}, "
        f"or: streameval table {args.out} --include-all)",
        file=sys.stderr,
    )
    if run.stopped:
        return EXIT_INTERRUPTED
    if report.bad_input or report.input_problems or run.bad_input or incomplete:
        return EXIT_BAD_INPUT
    return EXIT_OK


def _run_rescore(args: argparse.Namespace) -> int:
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


def _lazy(target: str) -> Callable[[argparse.Namespace], int]:
    """A command's runner, imported when that command runs (``"module:function"``)."""

    def run(args: argparse.Namespace) -> int:
        runner: Callable[[argparse.Namespace], int] = load_target(target)
        return runner(args)

    return run


def _run_rescore_command(args: argparse.Namespace) -> int:
    if args.ray is not None:
        from streameval.cli.ray import run_ray_rescore

        return run_ray_rescore(args)
    return _run_rescore(args)


def _run_dashboard_command(args: argparse.Namespace) -> int:
    if args.mqtt is None:
        from streameval.cli.dashboard import run_browse

        return run_browse(args)
    from streameval.cli.network import run_dashboard_mqtt

    return run_dashboard_mqtt(args)


def _run_demo_command(args: argparse.Namespace) -> int:
    if args.list_defects:
        from streameval.worlds.procedural_world import DEFECT_PRESETS

        print("\n".join(DEFECT_PRESETS))
        return EXIT_OK
    return _run_episodes(args)


# The one dispatch table: command -> runner (each returns its exit status).
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": _run_demo_command,
    "attach": _run_episodes,
    "replay": _run_episodes,
    "rescore": _run_rescore_command,
    "table": _lazy("streameval.cli.table:run_table"),
    "report": _lazy("streameval.cli.report:run_report"),
    "dashboard": _run_dashboard_command,
    "serve": _lazy("streameval.cli.network:run_serve"),
    "pool": _lazy("streameval.cli.pool:run_pool"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, dispatch, and turn the error tree into an exit status — here and only here."""
    args = build_parser().parse_args(split_ray_flag(sys.argv[1:] if argv is None else argv))
    configure_logging(args)
    try:
        check_ray_usage(args)
        return COMMANDS[args.command](args)
    except BadInputError as exc:  # unknown names and unavailable backends included
        print(f"error: {exc}", file=sys.stderr)
        return exit_status(exc)
    except OSError as exc:  # the disk, not an input: one line, exit 1, never a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILURE
    except (KeyboardInterrupt, asyncio.CancelledError):
        where = f"; results in {args.out}/" if getattr(args, "out", None) else ""
        print(
            f"interrupted: episodes in progress were finalized as incomplete{where}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())

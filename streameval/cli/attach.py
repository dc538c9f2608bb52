"""``streameval attach URL``: drive a model — in process (``python:MODULE:FACTORY``) or
behind a network URL — through the keystroke protocol and score it live."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streameval.cli.evaluate import run_episodes
from streameval.cli.options import (
    add_adapter_options,
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
from streameval.inputs.numbers import FPS, SECONDS_PER_KEY, STEP_TIMEOUT
from streameval.protocol.suites import SOAK_SUITE
from streameval.runs.builders import ALL_ACTIONS, model_jobs, network_jobs
from streameval.runs.cases import CaseSelection, OpenForCase, model_case_jobs
from streameval.runs.jobs import EpisodeJob, JobsReport
from streameval.runs.python_model import load_python_model
from streameval.transports.inprocess.model_thread import DEFAULT_STEP_TIMEOUT_S

if TYPE_CHECKING:
    from streameval.cases.model import CaseSet
    from streameval.transports.urls import AttachOptions


def add_parser(sub: Any) -> None:
    attach = sub.add_parser("attach", help="attach to a model and drive the protocol")
    attach.add_argument(
        "url",
        help="python:MODULE:FACTORY (an in-process model; see docs/evaluate-your-model.md), "
        "webrtc+http://HOST:PORT/PATH, mjpeg+http://HOST:PORT/PATH, ws[s]://HOST:PORT/PATH "
        "or http[s]://HOST:PORT/PATH (a request per chunk) with --profile, "
        '"exec:COMMAND ARGS..." (a program asked on stdin) with --profile, '
        "mqtt[s]://[USER:PASS@]HOST:PORT/SESSION",
    )
    attach.add_argument(
        "more_urls",
        nargs="*",
        metavar="URL",
        help="more servers of the same model (one transport, one --profile): with --cases, "
        "each runs one case at a time, cases handed out as servers free up",
    )
    attach.add_argument(
        "--out", type=Path, required=True, help="results directory (OUT/<model>/<episode>/)"
    )
    memory_loop_options(attach)
    attach.add_argument(
        "--actions",
        type=parse_actions,
        default=None,
        help="worldmark action ids, e.g. 9,14,12 or 1-15 (default: all 15); with --cases, "
        "the cases of these actions",
    )
    attach.add_argument(
        "--seconds-per-key",
        type=ranged(SECONDS_PER_KEY),
        default=20.0,
        help="video seconds per key (default 20)",
    )
    attach.add_argument(
        "--fps", type=ranged(FPS), default=None, help="model fps (default: model.fps)"
    )
    add_adapter_options(attach)
    attach.add_argument(
        "--python",
        type=Path,
        default=None,
        metavar="PATH",
        help="run a python: model in this interpreter (its own environment: torch, CUDA, "
        "numpy as it pins them; nothing of streameval installed there), through the bridge "
        "(docs/evaluate-your-model.md#its-own-environment)",
    )
    attach.add_argument(
        "--step-timeout",
        type=ranged(STEP_TIMEOUT),
        default=DEFAULT_STEP_TIMEOUT_S,
        help="seconds a model call (factory, reset, step) may take before the episode is "
        f"ended as incomplete (default {DEFAULT_STEP_TIMEOUT_S:g})",
    )
    add_case_options(attach)
    add_network_options(attach)
    add_evaluation_options(attach)
    add_output_options(attach, record=True)


def add_network_options(attach: argparse.ArgumentParser) -> None:
    attach.add_argument(
        "--clock",
        choices=["wall", "video"],
        default=None,
        help="wall: hold each key --seconds-per-key of wall time while the server plays at "
        "its own rate (default for webrtc/mjpeg URLs); video: switch after that many frames "
        "(default for python: and mqtt: and --lossless)",
    )
    attach.add_argument(
        "--key-map",
        default=None,
        help="key names a public-style server expects, e.g. L=j,R=l "
        "(default: w s a d ArrowLeft ArrowRight)",
    )
    attach.add_argument(
        "--keys-url",
        default=None,
        help="where keys go when not with the frames: http(s):// (POSTed) or ws(s):// "
        "(messages on a WebSocket of their own)",
    )
    attach.add_argument(
        "--profile",
        default=None,
        metavar="NAME|FILE.toml",
        help="how the server talks: a built-in (`streameval profiles` lists them) or a TOML "
        "file (docs/serve-formats.md#writing-a-profile); required for ws://, http:// and "
        "exec: URLs",
    )
    attach.add_argument(
        "--page",
        default=None,
        metavar="TEXT",
        help="browser+http://HOST:PORT of a Chromium you started with "
        "--remote-debugging-port: the tab whose title or URL contains TEXT",
    )
    attach.add_argument(
        "--lossless",
        action="store_true",
        help="webrtc: our protocol with frames on the data channel (streameval serve)",
    )
    attach.add_argument(
        "--server-path",
        action="append",
        default=[],
        metavar="LOCAL=REMOTE",
        help="with --cases and a profile that sends the image as a path: how a server on "
        "another machine sees our files (repeatable; the longest LOCAL wins)",
    )
    attach.add_argument(
        "--image",
        type=Path,
        default=None,
        metavar="PATH",
        help="without --cases: the start image every episode is given, sent as a case's start "
        "(uploaded, inline or as a path, as the profile says; docs/serve-formats.md"
        "#conditioning-a-case)",
    )
    attach.add_argument(
        "--prompt", default=None, metavar="TEXT", help="with --image: the caption sent with it"
    )
    attach.add_argument(
        "--intrinsics",
        default=None,
        metavar="fx,fy,cx,cy",
        help="with --image: its camera intrinsics, in its pixels",
    )
    attach.add_argument(
        "--max-sessions",
        type=int,
        default=None,
        help="with several URLs: at most this many sessions at once (default: one per core "
        "of this machine)",
    )
    attach.add_argument(
        "--no-frame-timeout",
        type=float,
        default=10.0,
        help="seconds without a frame before the episode is marked stalled (default 10)",
    )


def jobs(args: argparse.Namespace, report: JobsReport) -> list[EpisodeJob]:
    from streameval.transports.urls import is_network_url

    cases = case_selection(args)
    start = _start_options(args)
    if args.python is not None and not args.url.startswith("python:"):
        raise BadInputError(f"--python {args.python}", "runs a python: model, not " + args.url)
    if cases is not None and args.suite == SOAK_SUITE:
        raise BadInputError("--suite soak", "is one continuous episode: not with --cases")
    if cases is not None:
        if start:
            raise BadInputError(start[0], "not with --cases (each case has its own start)")
        return case_attach_jobs(args, cases)
    if is_network_url(args.url):
        return network_attach_jobs(args)
    if start:
        raise BadInputError(
            start[0], "is for network servers; give an in-process model a start with --cases"
        )
    if args.suite == SOAK_SUITE:
        raise BadInputError("--suite soak", "needs a served model (a network URL): the "
                            "real-time verdict judges a stream the model plays")  # fmt: skip
    model, name = load_python_model(args.url, args.app_dir, args.step_timeout, args.python)
    return model_jobs(
        model,
        args.model_name or name,
        args.out,
        actions=args.actions or ALL_ACTIONS,
        seconds_per_key=args.seconds_per_key,
        fps=args.fps,
        record=args.record,
        suite=args.suite,
        loops=loop_plan(args),
        step_timeout=args.step_timeout,
        origin=args.url,
    )


def case_attach_jobs(args: argparse.Namespace, cases: CaseSelection) -> list[EpisodeJob]:
    """``attach URL --cases PATH``: every selected case one episode, the model reset to the
    case's image before it; the cases are read and checked before the model is built."""
    from streameval.transports.urls import is_network_url

    case_set = cases.load()
    if is_network_url(args.url):
        return network_case_jobs(args, cases, case_set)
    model, name = load_python_model(args.url, args.app_dir, args.step_timeout, args.python)
    return model_case_jobs(
        model,
        args.model_name or name,
        args.out,
        case_set,
        seed=cases.seed,
        seconds_per_key=args.seconds_per_key,
        loops=loop_plan(args),
        fps=args.fps,
        record=args.record,
        step_timeout=args.step_timeout,
        origin=args.url,
        selection=cases.record(),
    )


def network_case_jobs(
    args: argparse.Namespace, cases: CaseSelection, case_set: CaseSet
) -> list[EpisodeJob]:
    """``attach URL [URL ...] --cases PATH``: every case a session on one of the servers,
    started from the case as the profile sends it; every server's profile and conditioning
    checked against every case before the first runs."""
    from streameval.cases.conditioning import parse_server_paths
    from streameval.runs.builders import network_model_name
    from streameval.runs.cases import case_jobs
    from streameval.runs.servers import ServerChoice
    from streameval.transports.urls import check_attach_conditioning, network_case_opener

    urls = server_urls(args)
    options = attach_options(args)
    check_attach_conditioning(urls, options, case_set.cases)
    openers = [network_case_opener(url, options) for url in urls]
    open_for_case: OpenForCase = openers[0] if len(openers) == 1 else ServerChoice(openers)
    return case_jobs(
        case_set,
        args.out,
        getattr(args, "model_name", None) or network_model_name(args.url),
        open_for_case,
        cases.seed,
        seconds_per_key=args.seconds_per_key,
        loops=loop_plan(args),
        fps=args.fps,
        fps_asked=args.fps,
        record=getattr(args, "record", "lossless"),
        selection=cases.record(),
        server_paths=parse_server_paths(args.server_path),
    )


def server_urls(args: argparse.Namespace) -> list[str]:
    """Every server URL of the command line: one model, one transport. More than one is for
    ``--cases`` (a case set handed out over the servers)."""
    urls = [args.url, *getattr(args, "more_urls", [])]
    if len(urls) > 1:
        if getattr(args, "cases", None) is None:
            raise BadInputError(urls[1], "several URLs need --cases (one case per server)")
        schemes = {url.split("://", 1)[0].split(":", 1)[0] for url in urls}
        if len(schemes) > 1:
            raise BadInputError(urls[1], f"several URLs must share one transport, got {schemes}")
    if getattr(args, "max_sessions", None) is not None and args.max_sessions < 1:
        raise BadInputError("--max-sessions", f"must be >= 1, got {args.max_sessions}")
    return urls


def attach_options(args: argparse.Namespace) -> AttachOptions:
    from streameval.transports.urls import AttachOptions

    return AttachOptions(
        clock=args.clock,
        seconds_per_key=args.seconds_per_key,
        fps=args.fps,
        key_map=args.key_map,
        keys_url=args.keys_url,
        lossless=args.lossless,
        no_frame_timeout_s=args.no_frame_timeout,
        profile=args.profile,
        page=getattr(args, "page", None),
    )


def _start_options(args: argparse.Namespace) -> list[str]:
    """The ``--image/--prompt/--intrinsics`` options given (a command without them has none)."""
    names = ("image", "prompt", "intrinsics")
    return [f"--{n}" for n in names if getattr(args, n, None) is not None]


def network_attach_jobs(args: argparse.Namespace) -> list[EpisodeJob]:
    """``attach URL`` for a network URL: the command line's options, to the one builder; the
    start (``--image``) read and checked, and a server that needs one refused without it,
    before anything connects."""
    from streameval.cases.conditioning import parse_server_paths
    from streameval.runs.attach_start import attach_start
    from streameval.transports.urls import check_attach_conditioning, refuse_without_start

    urls = server_urls(args)
    options = attach_options(args)
    start = attach_start(
        getattr(args, "image", None),
        getattr(args, "prompt", None),
        getattr(args, "intrinsics", None),
        parse_server_paths(getattr(args, "server_path", [])),
    )
    jobs = network_jobs(
        args.url,
        args.out,
        options,
        actions=args.actions or ALL_ACTIONS,
        suite=args.suite,
        loops=loop_plan(args),
        fps=args.fps,
        model_name=getattr(args, "model_name", None),
        record=getattr(args, "record", "lossless"),
        start=start,
        soak_minutes=getattr(args, "minutes", 5.0),
    )
    if start is None or not start.has_image:  # after the profile's own checks
        refuse_without_start(urls, options)
    if start is not None:
        check_attach_conditioning(urls, options, [start.case])
    return jobs


def run(args: argparse.Namespace) -> int:
    return run_episodes(args, jobs)

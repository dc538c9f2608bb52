"""``streameval attach URL``: drive a model — in process (``python:MODULE:FACTORY``) or
behind a network URL — through the keystroke protocol and score it live."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streameval.cli.evaluate import run_spec, spec_of, stop_rule
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
from streameval.runs.spec import Drive, InProcessModel, RunSpec, Servers, Start
from streameval.transports.inprocess.model_thread import DEFAULT_STEP_TIMEOUT_S

if TYPE_CHECKING:
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


def spec(args: argparse.Namespace) -> RunSpec:
    """``attach``'s run: an in-process model (``python:MODULE:FACTORY``) or the server(s)
    at the URL(s), on the suite or the cases asked for."""
    from streameval.transports.urls import is_network_url

    model: InProcessModel | Servers
    if args.python is not None and not args.url.startswith("python:"):
        raise BadInputError(f"--python {args.python}", "runs a python: model, not " + args.url)
    if is_network_url(args.url):
        urls = (args.url, *args.more_urls)
        model = Servers(urls, attach_options(args), args.max_sessions, refuse_without_start=True)
    else:
        model = InProcessModel(args.url, args.app_dir, args.step_timeout, args.python)
    start = Start(args.image, args.prompt, args.intrinsics)
    return spec_of(
        args,
        model=model,
        drive=Drive(
            suite=args.suite,
            actions=None if args.actions is None else tuple(args.actions),
            loops=loop_plan(args),
            seconds_per_key=args.seconds_per_key,
            fps=args.fps,
            soak_minutes=args.minutes,
            cases=case_selection(args),
        ),
        start=start if start.given() else None,
        model_name=args.model_name,
        record=args.record,
        repeat=args.repeat,
        claim=args.claim,
        profile=args.profile,
        stop_when=stop_rule(args),
    )


def attach_options(args: argparse.Namespace) -> AttachOptions:
    """The transport options of a network URL (``--clock``, ``--key-map``, ``--profile``,
    ``--server-path``, ...)."""
    from streameval.cases.conditioning import parse_server_paths
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
        server_paths=parse_server_paths(args.server_path),
        page=args.page,
    )


def run(args: argparse.Namespace) -> int:
    return run_spec(args, spec(args))

"""The network side of the command line: ``attach`` options for live servers and ``serve``.

Kept out of ``cli.py`` so the shared module only gains three hooks, and out of
``transports/`` because it reaches the dashboard (``streameval.tui.remote``), which itself
uses the transports: inside ``transports/`` it made an import cycle (``tests/test_packaging.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from streameval.errors import BadInputError
from streameval.protocol.wire import IMAGE_ENCODINGS
from streameval.runs.builders import network_jobs
from streameval.runs.jobs import EpisodeJob
from streameval.transports.mqtt_url import connect_problem
from streameval.transports.urls import AttachOptions

LOOPBACK = "127.0.0.1"


def add_attach_network_args(attach: argparse.ArgumentParser) -> None:
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
    attach.add_argument("--keys-url", default=None, help="MJPEG: where keys are POSTed as JSON")
    attach.add_argument(
        "--lossless",
        action="store_true",
        help="webrtc: our protocol with frames on the data channel (streameval serve)",
    )
    attach.add_argument(
        "--no-frame-timeout",
        type=float,
        default=10.0,
        help="seconds without a frame before the episode is marked stalled (default 10)",
    )


def add_serve_parser(sub: Any) -> None:
    serve = sub.add_parser("serve", help="expose a step(key) model over WebRTC or MQTT")
    serve.add_argument("model", help="python:MODULE:FACTORY")
    where = serve.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--webrtc",
        metavar="[HOST:]PORT",
        help="listen for offers on http://HOST:PORT/offer (HOST defaults to 127.0.0.1)",
    )
    where.add_argument("--mqtt", metavar="URL", help="mqtt[s]://[USER:PASS@]HOST:PORT/SESSION")
    serve.add_argument(
        "--encoding",
        choices=IMAGE_ENCODINGS,
        default="raw",
        help="MQTT frame encoding (default raw: lossless, 3 bytes a pixel)",
    )
    serve.add_argument("--fps", type=float, default=None, help="model fps (default: model.fps)")


def add_dashboard_parser(sub: Any) -> None:
    dashboard = sub.add_parser(
        "dashboard",
        help="browse finished results (RESULTS_DIR...) or watch an evaluation running "
        "elsewhere (--mqtt)",
        description="With RESULTS_DIR...: browse finished results (leaderboard, each model's "
        "episodes and segments, and key o: an episode's report.html). With --mqtt: watch the "
        "live scores of an evaluation running elsewhere.",
    )
    dashboard.add_argument(
        "results",
        nargs="*",
        type=Path,
        metavar="RESULTS_DIR",
        help="results directories to browse (not with --mqtt)",
    )
    dashboard.add_argument(
        "--mqtt",
        default=None,
        metavar="URL",
        help="mqtt[s]://HOST:PORT[/SESSION]: live scores published by the evaluator "
        "(every session on the broker without SESSION)",
    )
    dashboard.add_argument("--no-tui", action="store_true", help="one line per update")


def run_dashboard_mqtt(args: argparse.Namespace) -> int:
    from streameval.transports.mqtt_url import parse_mqtt_url

    if getattr(args, "results", None):
        raise BadInputError("dashboard", "RESULTS_DIR... or --mqtt URL, not both")

    parse_mqtt_url(args.mqtt, session_required=False)  # bad URL: exit 2 before anything
    if args.no_tui or not (sys.stdout.isatty() and sys.stdin.isatty()):
        from streameval.transports.remote_watch import format_update, watch_scores

        try:
            from streameval.errors import redact_url

            def subscribed() -> None:
                print(f"watching {redact_url(args.mqtt)}", file=sys.stderr, flush=True)

            def show(session: str, update: Any) -> None:
                print(format_update(session, update), flush=True)

            asyncio.run(watch_scores(args.mqtt, show, subscribed))
        except KeyboardInterrupt:
            return 0
        except Exception as exc:
            if _is_mqtt_error(exc):
                raise BadInputError(args.mqtt, connect_problem(exc)) from None
            raise
        return 0
    from streameval.transports.remote_watch import check_broker
    from streameval.tui.remote import RemoteDashboardApp

    try:
        asyncio.run(check_broker(args.mqtt))
    except Exception as exc:
        if _is_mqtt_error(exc):
            raise BadInputError(args.mqtt, connect_problem(exc)) from None
        raise
    RemoteDashboardApp(args.mqtt).run()
    return 0


def _is_mqtt_error(exc: BaseException) -> bool:
    """aiomqtt's errors and their subclasses (a refused CONNACK is ``MqttConnectError``),
    without importing aiomqtt for the WebRTC server."""
    return any(t.__name__ == "MqttError" for t in type(exc).__mro__)


def network_attach_jobs(args: argparse.Namespace) -> list[EpisodeJob]:
    """``attach URL`` for a network URL: the command line's options, to the one builder."""
    from streameval.cli.options import loop_plan

    options = AttachOptions(
        clock=args.clock,
        seconds_per_key=args.seconds_per_key,
        fps=args.fps,
        key_map=args.key_map,
        keys_url=args.keys_url,
        lossless=args.lossless,
        no_frame_timeout_s=args.no_frame_timeout,
    )
    return network_jobs(
        args.url,
        args.out,
        options,
        actions=args.actions,
        suite=args.suite,
        loops=loop_plan(args),
        fps=args.fps,
        model_name=getattr(args, "model_name", None),
        record=getattr(args, "record", "lossless"),
    )


def _listen_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise BadInputError("--webrtc", f"expected [HOST:]PORT, got {text!r}") from None
    return (host if sep and host else LOOPBACK), number


def run_serve(args: argparse.Namespace) -> int:
    from streameval.runs.python_model import load_python_model

    model, name = load_python_model(args.model)
    fps = args.fps or float(getattr(model, "fps", 16.0))
    width = int(getattr(model, "width", 0) or 0)
    height = int(getattr(model, "height", 0) or 0)
    try:
        if args.webrtc:
            asyncio.run(_serve_webrtc(args, name, fps, width, height))
        else:
            asyncio.run(_serve_mqtt(args, model, name, fps, width, height))
    except KeyboardInterrupt:
        return 0
    except OSError as exc:
        raise BadInputError(args.webrtc or args.mqtt, f"cannot serve: {exc}") from None
    except Exception as exc:
        if _is_mqtt_error(exc):
            raise BadInputError(args.mqtt, connect_problem(exc)) from None
        raise
    return 0


async def _serve_mqtt(
    args: argparse.Namespace, model: Any, name: str, fps: float, w: int, h: int
) -> None:
    """Serve until interrupted; "serving … on URL" is printed once the broker has taken the
    connection (a script may start evaluators on that line), never for a refused one."""
    from streameval.errors import redact_url
    from streameval.transports.mqtt_serve import serve_mqtt

    ready = asyncio.Event()
    serving = asyncio.create_task(
        serve_mqtt(
            model, args.mqtt, name=name, fps=fps, width=w, height=h,
            encoding=args.encoding, ready=ready,
        )
    )  # fmt: skip
    announced = asyncio.create_task(ready.wait())
    await asyncio.wait([serving, announced], return_when=asyncio.FIRST_COMPLETED)
    if ready.is_set():
        print(f"serving {name} on {redact_url(args.mqtt)}", file=sys.stderr, flush=True)
    else:
        announced.cancel()
    await serving


async def _serve_webrtc(args: argparse.Namespace, name: str, fps: float, w: int, h: int) -> None:
    from streameval.runs.python_model import load_python_model
    from streameval.transports.webrtc_serve import WebRTCServer

    host, port = _listen_address(args.webrtc)

    def factory() -> Any:
        return load_python_model(args.model)[0]

    server = WebRTCServer(factory, name=name, fps=fps, width=w, height=h)
    port = await server.start(host, port)
    print(f"serving {name} on http://{host}:{port}/offer", file=sys.stderr)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()

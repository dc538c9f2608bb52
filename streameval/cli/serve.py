"""``streameval serve python:MODULE:FACTORY``: expose a step(key) model over WebRTC (both
styles) or MQTT, for evaluators elsewhere."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from streameval.cli.exit_codes import EXIT_OK
from streameval.cli.options import add_adapter_options, add_verbosity_options
from streameval.constants import DEFAULT_FPS
from streameval.errors import BadInputError
from streameval.protocol.wire import IMAGE_ENCODINGS
from streameval.transports.mqtt.url import connect_problem, is_mqtt_error

LOOPBACK = "127.0.0.1"


def add_parser(sub: Any) -> None:
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
    serve.add_argument(
        "--image-root",
        type=Path,
        default=None,
        metavar="DIR",
        help="WebRTC: a case's configure may name an image file (image_path) under DIR; "
        "without it only inline images (image_base64) are taken",
    )
    # what attach takes for the same adapter means the same here (one definition)
    add_adapter_options(serve)
    add_verbosity_options(serve)


def _listen_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise BadInputError("--webrtc", f"expected [HOST:]PORT, got {text!r}") from None
    return (host if sep and host else LOOPBACK), number


def run(args: argparse.Namespace) -> int:
    from streameval.runs.python_model import load_python_model

    model, name = load_python_model(args.model, args.app_dir, python=args.python)
    name = args.model_name or name
    fps = args.fps or float(getattr(model, "fps", DEFAULT_FPS))
    width = int(getattr(model, "width", 0) or 0)
    height = int(getattr(model, "height", 0) or 0)
    if args.image_root is not None and not args.image_root.is_dir():
        raise BadInputError("--image-root", f"{args.image_root} is not a folder")
    try:
        if args.webrtc:
            asyncio.run(_serve_webrtc(args, name, fps, width, height))
        else:
            asyncio.run(_serve_mqtt(args, model, name, fps, width, height))
    except KeyboardInterrupt:  # the way to stop a server: not an interrupted evaluation
        return EXIT_OK
    except OSError as exc:
        raise BadInputError(args.webrtc or args.mqtt, f"cannot serve: {exc}") from None
    except Exception as exc:
        if is_mqtt_error(exc):
            raise BadInputError(args.mqtt, connect_problem(exc)) from None
        raise
    return EXIT_OK


async def _serve_mqtt(
    args: argparse.Namespace, model: Any, name: str, fps: float, w: int, h: int
) -> None:
    """Serve until interrupted; "serving … on URL" is printed once the broker has taken the
    connection (a script may start evaluators on that line), never for a refused one."""
    from streameval.errors import redact_url
    from streameval.transports.mqtt.serve import serve_mqtt

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
    from streameval.transports.webrtc.serve import WebRTCServer

    host, port = _listen_address(args.webrtc)

    def factory() -> Any:
        return load_python_model(args.model, args.app_dir, python=args.python)[0]

    server = WebRTCServer(
        factory, name=name, fps=fps, width=w, height=h, image_root=args.image_root
    )
    port = await server.start(host, port)
    print(f"serving {name} on http://{host}:{port}/offer", file=sys.stderr)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()

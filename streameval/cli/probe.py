"""``streameval probe URL --profile P``: what each key name does on a server, measured, and a
profile written from it (docs/bring-up-a-new-server.md).

Every door ``attach`` has that streams: a server (ws, WebRTC, MJPEG, an Overworld claim), a
web page (``browser+…``, ``--page`` for a tab of the user's Chromium; ``web-wasd`` without
``--profile``), a server turned by the mouse (``mouse:DX,DY`` candidates), and a
``python:M:F`` adapter, in process or in its own environment (``--python``), whose W S A D L R
are checked rather than mapped (nothing to write).

Prints one table (``--json``: one object); ``--write-profile FILE`` writes the profile only
when every one of W S A D L R has exactly one clear name. Exit status: 0 a complete mapping
(written when asked), 1 no mapping (each reason on its own line: the key, what was tried),
2 bad input (a profile that cannot be probed, a server that cannot be reached).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streameval.cli.exit_codes import EXIT_FAILURE, EXIT_OK
from streameval.cli.options import add_adapter_location_options, ranged
from streameval.errors import BadInputError
from streameval.inputs.numbers import FPS, STEP_TIMEOUT, Range
from streameval.transports.inprocess.model_thread import DEFAULT_STEP_TIMEOUT_S
from streameval.transports.profiles.mouse_names import PREFIX, is_mouse_name

if TYPE_CHECKING:
    from streameval.probe import ProbeOptions, ProbeReport

PRESS_SECONDS = Range("seconds", 0.2, 60.0)
NO_FRAME_SECONDS = Range("seconds", 0.5, 600.0)
MOUSE_STEP = Range("mouse motion per frame", 0.01, 100_000.0)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "probe",
        help="measure what each key name does on a server; write a profile from it",
        description="Press each candidate key name from rest (the profile's names, then "
        "letters, arrows, j/l, q/e, i/k) and measure what it does, how fast, how soon and "
        "how eased; and the server's delivered fps, chunk lengths, resolution and messages.",
    )
    p.add_argument(
        "url",
        help="ws[s]://…, webrtc+http://…, mjpeg+http://…, browser+https://…, an Overworld "
        "claim URL, or python:MODULE:FACTORY (as for attach)",
    )
    p.add_argument(
        "--profile",
        default=None,
        help="a built-in profile or a FILE.toml (required for a server; browser+ pages "
        "default to web-wasd; none for python:)",
    )
    p.add_argument(
        "--write-profile",
        type=Path,
        metavar="FILE",
        help="write the base profile with [keys] names found (only when all six are clear)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object, not a table")
    p.add_argument(
        "--seconds",
        type=ranged(PRESS_SECONDS),
        default=3.0,
        help="seconds each name is held (default 3)",
    )
    p.add_argument(
        "--rest",
        type=ranged(PRESS_SECONDS),
        default=2.0,
        help="seconds of rest after each keyup, long enough for the ease-out (default 2)",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="press every alternative even when the profile's names already map all six",
    )
    p.add_argument(
        "--try",
        dest="extra",
        action="append",
        default=[],
        metavar="NAME",
        help="another key name to press (repeatable), after the profile's; mouse:DX,DY is "
        "a mouse motion per frame",
    )
    p.add_argument(
        "--mouse-step",
        type=ranged(MOUSE_STEP),
        default=None,
        metavar="N",
        help="the mouse motion per frame tried left and right, where the server can be sent "
        "mouse motion (default: the profile's [keys.mouse], else 8)",
    )
    p.add_argument(
        "--page",
        default=None,
        metavar="TEXT",
        help="browser+http://HOST:PORT of a Chromium you started with "
        "--remote-debugging-port: the tab whose title or URL contains TEXT",
    )
    add_adapter_location_options(p)
    p.add_argument(
        "--fps", type=ranged(FPS), default=None, help="python: the model's fps (default model.fps)"
    )
    p.add_argument(
        "--step-timeout",
        type=ranged(STEP_TIMEOUT),
        default=DEFAULT_STEP_TIMEOUT_S,
        help="python: seconds the factory, reset and one step may take "
        f"(default {DEFAULT_STEP_TIMEOUT_S:g})",
    )
    p.add_argument(
        "--image",
        type=Path,
        help="a start image the profile sends (as a case would): says whether the server "
        "started from it",
    )
    p.add_argument("--prompt", help="the caption sent with --image")
    p.add_argument("--keys-url", help="where keys go, for profiles with channel = 'keys-url'")
    p.add_argument(
        "--no-frame-timeout",
        type=ranged(NO_FRAME_SECONDS),
        default=10.0,
        help="seconds without a frame before the probe gives up (default 10)",
    )


def run(args: argparse.Namespace) -> int:
    from streameval.probe import ProbeOptions, probe, probe_profile
    from streameval.probe.write import profile_text, write_profile
    from streameval.transports.profiles import load_profile

    _check(args)
    options = ProbeOptions(
        press_s=args.seconds,
        rest_s=args.rest,
        every=args.all,
        extra=tuple(args.extra),
        image=args.image,
        prompt=args.prompt,
        no_frame_timeout_s=args.no_frame_timeout,
        keys_url=args.keys_url,
        page=args.page,
        mouse_step=args.mouse_step,
        step_timeout_s=args.step_timeout,
    )
    adapter = args.url.startswith("python:")
    spec = args.profile if adapter else probe_profile(args.url, args.profile)
    # stdout is the report's (``--json``: one object): what an in-process adapter prints
    # while it loads and steps goes to stderr (the bridge's worker keeps even C-level writes)
    with contextlib.redirect_stdout(sys.stderr):
        if adapter:
            report = _probe_adapter(args, options)
        else:
            report = asyncio.run(probe(args.url, spec, options))
    if args.write_profile is not None and report.mapping.complete:
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        announced = report.server.fps_announced
        fps = announced or report.server.fps_measured
        how = "as the server announced it" if announced else "as delivered while generating"
        aliases = "".join(
            f"\n{key}: {', '.join(others)} does it too ({report.mapping.names[key]} chosen)"
            for key, others in report.mapping.aliases.items()
        )
        response = report.response_s()
        said = "" if response is None else "; response_s: a key's median response"
        comment = (
            f"Written by streameval probe {stamp} from profile {report.profile!r} against\n"
            f"{report.url}: keys as measured; fps {how}{said}.{aliases}"
        )
        text = profile_text(
            load_profile(spec),
            report.mapping.names,
            fps=(fps if announced else round(fps * 2) / 2) if fps else None,
            comment=comment,
            response_s=response,
        )
        write_profile(args.write_profile, text)
        report.written = str(args.write_profile)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.table())
    if not report.mapping.complete:
        where = f" to {args.write_profile}" if args.write_profile is not None else ""
        lead = "error" if adapter else f"error: no profile written{where}"
        for problem in report.mapping.problems:
            print(f"{lead}: {problem}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def _probe_adapter(args: argparse.Namespace, options: ProbeOptions) -> ProbeReport:
    """``python:M:F``: the model built as ``attach`` builds it (``--python``: through the
    bridge, whose worker is stopped after), then probed key by key."""
    from streameval.probe import SteppedModel, probe_adapter
    from streameval.runs.python_model import load_python_model, model_fps, model_size

    model, name = load_python_model(
        args.url, args.app_dir, timeout=args.step_timeout, python=args.python
    )
    try:
        stepped = SteppedModel(
            model,
            name,
            model_fps(model, args.fps, args.url),
            model_size(model, "width"),
            model_size(model, "height"),
            "in process" if args.python is None else f"python {args.python}",
        )
        return asyncio.run(probe_adapter(args.url, stepped, options))
    finally:
        if args.python is not None:  # the bridge's worker: ours to stop
            model.close()


def _check(args: argparse.Namespace) -> None:
    """Options that do not fit the URL, each one line (exit 2) before anything starts."""
    adapter = args.url.startswith("python:")
    if adapter and args.profile is not None:
        raise BadInputError(
            f"--profile {args.profile}",
            "a python: adapter takes W S A D L R itself: no profile to probe it with",
        )
    if adapter and args.write_profile is not None:
        raise BadInputError(
            f"--write-profile {args.write_profile}",
            "a python: adapter takes W S A D L R itself: there is no profile to write (the "
            "probe says whether each key does its command)",
        )
    if not adapter:
        for option, value in (("--python", args.python), ("--fps", args.fps)):
            if value is not None:
                raise BadInputError(f"{option} {value}", "only for a python:MODULE:FACTORY URL")
    if args.page is not None and not args.url.startswith("browser+"):
        raise BadInputError(f"--page {args.page}", "only for a browser+http://HOST:PORT URL")
    for name in args.extra:
        if name.startswith(PREFIX) and not is_mouse_name(name):
            raise BadInputError(
                f"--try {name}", "a mouse motion is mouse:DX,DY (per frame, not both 0)"
            )

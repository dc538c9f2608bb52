"""``streameval doctor [URL] [--python PATH] [backend options]``: what the run will need,
checked now, each failure with the command or file that fixes it (``runs/doctor.py``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from streameval.cli.exit_codes import EXIT_FAILURE, EXIT_OK
from streameval.cli.options import pipeline_config, ranged
from streameval.inputs.numbers import STEP_TIMEOUT
from streameval.transports.inprocess.model_thread import DEFAULT_STEP_TIMEOUT_S


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "doctor",
        help="check what a run will need (the model's interpreter and adapter, backends and "
        "their weights, codecs, broker, browser, CPU fast paths); each failure with its fix",
    )
    p.add_argument(
        "url",
        nargs="?",
        default=None,
        help="what the run attaches to: python:MODULE:FACTORY, a server URL, mqtt://, browser+URL",
    )
    p.add_argument(
        "--python",
        type=Path,
        default=None,
        metavar="PATH",
        help="the model environment's interpreter (attach --python)",
    )
    p.add_argument(
        "--app-dir",
        type=Path,
        default=Path("."),
        help="folder searched first for MODULE (default: the working directory)",
    )
    p.add_argument(
        "--step-timeout",
        type=ranged(STEP_TIMEOUT),
        default=DEFAULT_STEP_TIMEOUT_S,
        help="seconds the factory and one step may take",
    )
    p.add_argument(
        "--gpu",
        action="store_true",
        help="the run needs a GPU: check the driver and that torch sees it",
    )
    from streameval.cli.options import add_backend_options

    add_backend_options(p)
    p.add_argument(
        "--publish-mqtt", default=None, metavar="URL", help="the broker the run publishes to"
    )


def run(args: argparse.Namespace) -> int:
    from streameval.runs.doctor import DoctorRequest, diagnose

    request = DoctorRequest(
        url=args.url,
        python=args.python,
        app_dir=args.app_dir,
        step_timeout=args.step_timeout,
        config=pipeline_config(args),
        publish_mqtt=args.publish_mqtt,
        gpu=args.gpu,
    )
    findings = diagnose(request)
    for finding in findings:
        print(finding.line(), flush=True)
    failed = sum(f.level == "FAIL" for f in findings)
    warned = sum(f.level == "warn" for f in findings)
    print(f"{failed} problem(s), {warned} warning(s)" if failed or warned else "all good")
    return EXIT_FAILURE if failed else EXIT_OK

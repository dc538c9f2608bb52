"""``streameval pool evaluate | offer | status``: the live fan-out on the command line.

streameval pool evaluate mqtt://HOST:PORT --out DIR [--group G] [--name N]
    join the pool and evaluate the sessions the broker hands to this process
streameval pool offer mqtt://HOST:PORT SESSION... [--action 9] [--seconds-per-key S]
    offer sessions (served with ``streameval serve --mqtt mqtt://HOST:PORT/SESSION``)
streameval pool status mqtt://HOST:PORT [--group G]
    every session's claim; exit 1 when one is held by a lost evaluator (unaccounted)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from streameval.cli.exit_codes import EXIT_FAILURE, EXIT_OK
from streameval.cli.options import add_evaluation_options, pipeline_config
from streameval.scale.pool_messages import PoolMessageError, SessionOffer, check_name

DEFAULT_GROUP = "evaluators"


def add_parser(sub: Any) -> None:
    pool = sub.add_parser("pool", help="live fan-out: evaluators sharing sessions on a broker")
    verbs = pool.add_subparsers(dest="pool_command", required=True)

    def broker(p: argparse.ArgumentParser) -> None:
        p.add_argument("broker", metavar="URL", help="mqtt[s]://[USER:PASS@]HOST:PORT")
        p.add_argument(
            "--group", default=DEFAULT_GROUP, help=f"pool name (default {DEFAULT_GROUP})"
        )

    evaluate = verbs.add_parser("evaluate", help="join the pool and evaluate sessions")
    broker(evaluate)
    evaluate.add_argument("--out", type=Path, required=True, help="results: OUT/SESSION/")
    evaluate.add_argument(
        "--name",
        default=None,
        help="this evaluator's name in the pool (default HOST-PID); names order the "
        "takeover leader",
    )
    evaluate.add_argument(
        "--concurrency", type=int, default=1, help="sessions evaluated at once (default 1)"
    )
    evaluate.add_argument(
        "--no-frame-timeout",
        type=float,
        default=10.0,
        help="seconds without a frame before a session ends as stalled (default 10)",
    )
    add_evaluation_options(evaluate)

    offer = verbs.add_parser("offer", help="offer sessions to the pool")
    broker(offer)
    offer.add_argument("sessions", nargs="+", help="session names (served on the broker)")
    offer.add_argument("--action", type=int, default=9, help="worldmark action id 1–15 (default 9)")
    offer.add_argument(
        "--seconds-per-key", type=float, default=20.0, help="seconds per key (default 20)"
    )
    offer.add_argument(
        "--clock",
        choices=["video", "wall"],
        default="video",
        help="video: switch keys after that many frames (default); wall: after wall seconds",
    )

    status = verbs.add_parser("status", help="where every offered session stands")
    broker(status)


def _offers(args: argparse.Namespace) -> list[SessionOffer]:
    from streameval.errors import BadInputError
    from streameval.protocol.suites import WORLDMARK, worldmark_keys

    if args.action not in WORLDMARK:
        raise BadInputError("--action", f"worldmark action ids are 1–15, got {args.action}")
    keys = tuple(worldmark_keys(args.action))
    episode = f"{args.action:03d}_{''.join(keys)}"
    try:
        return [
            SessionOffer(
                check_name("session", s), episode, keys, args.seconds_per_key, clock=args.clock
            )
            for s in args.sessions
        ]
    except PoolMessageError as exc:
        raise BadInputError("pool offer", str(exc)) from None


async def _evaluate(args: argparse.Namespace) -> None:
    from streameval.scale.pool import PoolEvaluator

    name = args.name or f"{socket.gethostname()}-{os.getpid()}"
    member = PoolEvaluator(
        args.broker,
        args.out,
        name=name,
        group=args.group,
        config=pipeline_config(args),
        concurrency=args.concurrency,
        no_frame_timeout_s=args.no_frame_timeout,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await member.run(stop)


def run(args: argparse.Namespace) -> int:
    """Exit 0; 1 from ``status`` when a session is unaccounted for (BadInputError → 2)."""
    import aiomqtt

    from streameval.errors import BadInputError

    try:
        check_name("group", args.group)
    except PoolMessageError as exc:
        raise BadInputError("--group", str(exc)) from None
    try:
        return _run_pool(args)
    except aiomqtt.MqttError as exc:
        from streameval.transports.mqtt.url import connect_problem

        raise BadInputError(args.broker, connect_problem(exc, "cannot reach the broker")) from None


def _run_pool(args: argparse.Namespace) -> int:
    from streameval.errors import BadInputError
    from streameval.scale.pool import offer_sessions, read_pool

    if args.pool_command == "evaluate":
        if getattr(args, "publish_mqtt", None):
            raise BadInputError("--publish-mqtt", "not with pool evaluate (claims carry it)")
        asyncio.run(_evaluate(args))
        return EXIT_OK
    if args.pool_command == "offer":
        offers = _offers(args)
        asyncio.run(offer_sessions(args.broker, args.group, offers))
        print(f"offered {len(offers)} session(s) to pool {args.group!r}", file=sys.stderr)
        return EXIT_OK
    view = asyncio.run(read_pool(args.broker, args.group))
    orphans = {c.session for c in view.orphans()}
    for session, claim in sorted(view.claims.items()):
        who = f"{claim.evaluator} ({view.evaluators.get(claim.evaluator, 'unknown')})"
        extra = claim.reason or claim.results_dir or ""
        flag = "  UNACCOUNTED: its evaluator is gone and nobody took it over" * (session in orphans)
        print(
            f"{session:<20} {claim.state:<10} attempt {claim.offer.attempt}  {who}  {extra}{flag}"
        )
    for name, state in sorted(view.evaluators.items()):
        print(f"evaluator {name}: {state}")
    return EXIT_FAILURE if orphans else EXIT_OK

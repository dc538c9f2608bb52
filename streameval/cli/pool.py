"""``streameval pool evaluate | offer | status``: the live fan-out on the command line.

streameval pool evaluate mqtt://HOST:PORT --out DIR [--group G] [--name N]
    join the pool and evaluate the sessions the broker hands to this process
streameval pool offer mqtt://HOST:PORT SESSION... [--action 9] [--seconds-per-key S]
    offer sessions (served with ``streameval serve --mqtt mqtt://HOST:PORT/SESSION``)
streameval pool offer mqtt://HOST:PORT SESSION... --cases PATH [--sets S] [--images I]
        [--actions A] [--case-seed N] [--model-name M]
    share a benchmark's cases out over the sessions and the pool's evaluators, each case
    once (``runs.pool_cases``); runs until every case is accounted for
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
from streameval.cli.options import (
    add_evaluation_options,
    parse_actions,
    pipeline_config,
)
from streameval.errors import PoolMessageError
from streameval.scale.pool_messages import SessionOffer, check_name

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
    evaluate.add_argument(
        "--record",
        choices=["lossless", "lossy", "off"],
        default="lossless",
        help="a case's frames as a replayable recording/, as attach --cases keeps them "
        "(default lossless)",
    )
    add_evaluation_options(evaluate)

    offer = verbs.add_parser("offer", help="offer sessions (or a case set) to the pool")
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
    offer.add_argument(
        "--cases",
        type=Path,
        default=None,
        metavar="PATH",
        help="share a benchmark's cases out over the sessions (WorldMark's arena_inputs/ or a "
        ".jsonl manifest, at a path every evaluator reads): each case once, one at a time "
        "per session, results as attach --cases writes them; runs until every case is done",
    )
    offer.add_argument("--sets", default=None, help="with --cases: the sets to run")
    offer.add_argument("--images", default=None, help="with --cases: image numbers, e.g. 0-4,7")
    offer.add_argument(
        "--actions", type=parse_actions, default=None, help="with --cases: action ids, e.g. 1,6"
    )
    offer.add_argument(
        "--case-seed", type=int, default=0, help="with --cases: the case order's seed (default 0)"
    )
    offer.add_argument(
        "--model-name",
        default=None,
        help="with --cases: the run's model name (OUT/<model>/; default: the sessions' hello)",
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
    from streameval.runs.pool_cases import PoolCaseJobs
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
        case_jobs=PoolCaseJobs(args.out, args.record),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await member.run(stop)


def _offer_cases(args: argparse.Namespace) -> int:
    """``pool offer SESSION... --cases PATH``: the case run, until every case is accounted
    for; exit 0 when every case is complete, 2 when one is incomplete or failed (as
    ``attach --cases``), 130 when interrupted (run the same command again to resume)."""
    from streameval.cli.exit_codes import EXIT_BAD_INPUT
    from streameval.errors import BadInputError
    from streameval.runs.cases import CaseSelection
    from streameval.runs.pool_cases import offer_cases

    if args.seconds_per_key <= 0:
        raise BadInputError("--seconds-per-key", f"must be > 0, got {args.seconds_per_key}")
    selection = CaseSelection(
        args.cases,
        sets=args.sets,
        images=args.images,
        actions=",".join(map(str, args.actions)) if args.actions is not None else None,
        seed=args.case_seed,
    )
    report = asyncio.run(
        offer_cases(
            args.broker,
            args.group,
            list(args.sessions),
            selection,
            seconds_per_key=args.seconds_per_key,
            clock=args.clock,
            model_name=args.model_name,
        )
    )
    parts = [f"{len(report.complete)} complete", f"{len(report.incomplete)} incomplete"]
    parts += [f"{len(report.failed)} failed"] if report.failed else []
    parts += [f"{len(report.kept)} kept from before"] if report.kept else []
    for key, reason in {**report.incomplete, **report.failed}.items():
        print(f"error: {key}: {reason}", file=sys.stderr)
    print(f"cases of {report.model!r}: {', '.join(parts)}", file=sys.stderr)
    return EXIT_OK if report.all_complete else EXIT_BAD_INPUT


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
        if args.publish_mqtt:
            raise BadInputError("--publish-mqtt", "not with pool evaluate (claims carry it)")
        asyncio.run(_evaluate(args))
        return EXIT_OK
    if args.pool_command == "offer" and args.cases is not None:
        return _offer_cases(args)
    if args.pool_command == "offer":
        given = {"--sets": args.sets, "--images": args.images, "--actions": args.actions,
                 "--model-name": args.model_name}  # fmt: skip
        for flag, value in given.items():
            if value is not None:
                raise BadInputError(flag, "goes with --cases PATH")
        offers = _offers(args)
        asyncio.run(offer_sessions(args.broker, args.group, offers))
        print(f"offered {len(offers)} session(s) to pool {args.group!r}", file=sys.stderr)
        return EXIT_OK
    view = asyncio.run(read_pool(args.broker, args.group))
    orphans = {c.key for c in view.orphans()}
    for key, claim in sorted(view.claims.items()):
        who = f"{claim.evaluator} ({view.evaluators.get(claim.evaluator, 'unknown')})"
        extra = claim.reason or claim.results_dir or ""
        flag = "  UNACCOUNTED: its evaluator is gone and nobody took it over" * (key in orphans)
        # a case of a case run: the case and the session it ran on
        name = (
            claim.session
            if claim.offer.case is None
            else f"{claim.offer.case.key} on {claim.session}"
        )
        print(f"{name:<20} {claim.state:<10} attempt {claim.offer.attempt}  {who}  {extra}{flag}")
    for name, state in sorted(view.evaluators.items()):
        print(f"evaluator {name}: {state}")
    return EXIT_FAILURE if orphans else EXIT_OK

"""The ``--ray`` side of ``streameval replay`` and ``rescore``: the options, the replay's
``RayBatch`` (run on the one road, ``runs.run``), the rescore batch and their exit status.

Kept free of Ray imports (``ray_batch`` is imported inside the functions) so that building
the parser, or any command without ``--ray``, never loads Ray: it is an optional extra
(``pip install 'streameval[ray]'``).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from streameval.cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK
from streameval.errors import BadInputError
from streameval.runs.spec import RayBatch

if TYPE_CHECKING:
    from streameval.scale.ray_batch import BatchReport


_ADDRESS = re.compile(r"^(auto|local|ray://\S+|[A-Za-z0-9.\-]+:\d+)$")


def looks_like_address(text: str) -> bool:
    """A Ray address (``auto``, ``local``, ``HOST:PORT``, ``ray://…``), not a rollout path."""
    return bool(_ADDRESS.match(text))


def split_ray_flag(argv: Sequence[str]) -> list[str]:
    """``--ray`` takes an optional ADDRESS before the rollouts: a bare ``--ray`` followed by
    a rollout (or nothing) becomes ``--ray=local``, so argparse never takes the first rollout
    for the address."""
    out: list[str] = []
    for i, token in enumerate(argv):
        if token == "--ray" and (i + 1 == len(argv) or not looks_like_address(argv[i + 1])):
            out.append("--ray=local")
        else:
            out.append(token)
    return out


def add_ray_options(p: argparse.ArgumentParser, *, gpus: bool) -> None:
    """``--ray [ADDRESS]`` (and ``--gpus-per-episode`` for commands that run perception)."""
    group = p.add_argument_group("past one machine (Ray, optional extra streameval[ray])")
    group.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        metavar="ADDRESS",
        help="one episode per Ray task: no ADDRESS or 'local' starts Ray on this machine "
        "(or joins RAY_ADDRESS), 'auto' joins this machine's cluster, HOST:PORT or "
        "ray://HOST:PORT a given one. Episodes already scored complete are skipped (run the "
        "same command again to resume); rollouts and --out must be on storage every "
        "worker sees",
    )
    if gpus:
        group.add_argument(
            "--gpus-per-episode",
            type=float,
            default=0.0,
            metavar="N",
            help="GPUs Ray reserves for each episode (e.g. 1, or 0.5 to share one GPU "
            "between two episodes); only with --ray",
        )


def ray_batch(args: argparse.Namespace) -> RayBatch | None:
    """``--ray [ADDRESS]`` and ``--gpus-per-episode`` of ``replay`` (None without ``--ray``;
    ``--gpus-per-episode`` means nothing without it: said rather than ignored)."""
    if args.ray is None:
        if args.gpus_per_episode != 0.0:
            raise BadInputError("--gpus-per-episode", "only with --ray")
        return None
    return RayBatch(args.ray, float(args.gpus_per_episode))


def batch_exit_status(batch: BatchReport, earlier_bad_input: int) -> int:
    """A batch's errors, one line each, and its exit status: the local run's rules, a task
    that failed (not bad input) 1."""
    for message in batch.failures:
        print(f"error: {message}", file=sys.stderr)
    for message in batch.bad_input:
        print(f"error: {message}", file=sys.stderr)
    for r in batch.incomplete:
        assert r.outcome is not None
        messages = [e.message for e in r.outcome.errors]
        for message in messages or [f"{r.name}: episode incomplete"]:
            print(f"error: {message}", file=sys.stderr)
    if batch.failures:
        return EXIT_FAILURE
    if earlier_bad_input or batch.bad_input or batch.incomplete:
        return EXIT_BAD_INPUT
    return EXIT_OK


def run_ray_rescore(args: argparse.Namespace) -> int:
    """``rescore --ray``: every results folder under the arguments, one task each."""
    from streameval.engine.rescore import find_results_dirs
    from streameval.scale.ray_batch import RayOptions, run_rescore_batch

    dirs: list[Path] = []
    bad = 0
    for path in args.results:
        try:
            dirs.extend(find_results_dirs(path))
        except BadInputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            bad += 1
    batch = run_rescore_batch(dirs, RayOptions(address=args.ray))
    return batch_exit_status(batch, bad)

"""Options every evaluating command shares about its output: where an existing episode goes,
whether the model's frames are recorded, and how much the console says.

Kept apart from ``cli.py`` so the command definitions stay short and these rules have one
home: ``apply_existing_policy`` is the only place that decides whether an episode folder is
run, skipped or kept.
"""

from __future__ import annotations

import argparse
import logging
from typing import Literal

from streameval.jobs import EpisodeJob
from streameval.layout import ExistingPolicy, clear_episode_dir, decide

RecordMode = Literal["lossless", "lossy", "off"]
RECORD_MODES: tuple[RecordMode, ...] = ("lossless", "lossy", "off")


def add_output_options(p: argparse.ArgumentParser, *, record: bool) -> None:
    """``--overwrite``/``--resume`` (and ``--record`` for live runs) on command ``p``."""
    existing = p.add_mutually_exclusive_group()
    existing.add_argument(
        "--overwrite",
        action="store_true",
        help="replace episodes that already have results under --out (default: keep them "
        "and report each one)",
    )
    existing.add_argument(
        "--resume",
        action="store_true",
        help="skip episodes whose results under --out are complete; run the others",
    )
    if record:
        p.add_argument(
            "--record",
            choices=RECORD_MODES,
            default="lossless",
            help="keep the model's frames as a replayable recording/: lossless (default; "
            "replays bit-identically, ~4.5 MB per video-second at 640×432), lossy (H.264 "
            "CRF 18, ~30× smaller; a replay scores close to, not exactly as, the live run) or off",
        )


def add_verbosity_options(p: argparse.ArgumentParser) -> None:
    """``-v``/``-q`` on the top-level parser."""
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "-v", "--verbose", action="store_true", help="debug messages from every module"
    )
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress, only errors and the final summary",
    )


class _ConsoleHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The one handler the command line puts on the ``streameval`` logger (stderr)."""


def configure_logging(args: argparse.Namespace) -> None:
    """``streameval.*`` log records to stderr at the level ``-v``/``-q`` ask for (warnings by
    default). Only our logger is touched, so an embedding program keeps its own set-up, and
    records still propagate to the root logger's handlers."""
    if getattr(args, "verbose", False):
        level = logging.DEBUG
    elif getattr(args, "quiet", False):
        level = logging.ERROR
    else:
        level = logging.WARNING
    logger = logging.getLogger("streameval")
    logger.setLevel(level)
    for handler in [h for h in logger.handlers if isinstance(h, _ConsoleHandler)]:
        logger.removeHandler(handler)
    handler = _ConsoleHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)


def existing_policy(args: argparse.Namespace) -> ExistingPolicy:
    if getattr(args, "overwrite", False):
        return "overwrite"
    if getattr(args, "resume", False):
        return "resume"
    return "keep"


def apply_existing_policy(
    jobs: list[EpisodeJob], policy: ExistingPolicy
) -> tuple[list[EpisodeJob], list[str], list[str]]:
    """(jobs to run, skipped notes, kept errors). Folders of jobs to run are cleared first
    when they hold a former run, so nothing stale survives beside the new results."""
    decision = decide([job.results_dir for job in jobs], policy)
    to_run = set(decision.run)
    runnable = [job for job in jobs if job.results_dir in to_run]
    for job in runnable:
        clear_episode_dir(job.results_dir)
    return runnable, decision.skipped, decision.kept

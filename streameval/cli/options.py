"""Options several commands share: output policy, recording, verbosity, memory_loop
trajectories, and the argparse types that check numbers and action ids on the way in."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from streameval.cli.exit_codes import EXIT_BAD_INPUT
from streameval.constants import REALTIME_TARGET_FPS
from streameval.errors import BadInputError
from streameval.inputs.numbers import Range
from streameval.protocol.memory_loop import MEMORY_LOOP_SECONDS, MEMORY_LOOP_SUITE
from streameval.protocol.suites import SOAK_SUITE
from streameval.results.layout import ExistingPolicy

if TYPE_CHECKING:
    from streameval.engine.config import PipelineConfig
    from streameval.runs.cases import CaseSelection
from streameval.runs.builders import RECORD_MODES
from streameval.runs.memory_loop import LoopPlan


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
            "CRF 18, ~30× smaller; a replay scores close to, not exactly as, the live run) or off; "
            "depth the model sends is kept exactly in both (640×432: 17.7 MB per second)",
        )
        p.add_argument(
            "--repeat",
            type=_repeat_count,
            default=1,
            metavar="K",
            help="run each episode K times (repeats 2..K in OUT/.repeats/rK/) and say whether "
            "the rollouts are identical, or how far apart (per-frame PSNR); default 1",
        )
        p.add_argument(
            "--claim",
            default=None,
            metavar="TEXT",
            help="a stated performance to compare with what is measured, e.g. "
            "'25 fps, 1x H100, 720p': verdict consistent / below claim / different "
            "configuration / config not stated (default: the --profile's [claim], if any)",
        )


MAX_REPEAT = 100


def _repeat_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= MAX_REPEAT:
        raise argparse.ArgumentTypeError(f"{value} is outside 1..{MAX_REPEAT}")
    return value


def add_adapter_options(p: argparse.ArgumentParser) -> None:
    """``--model-name``, ``--app-dir`` and ``--python``: how a ``python:MODULE:FACTORY``
    adapter is found, named and run, the same for every command that loads one (``attach``,
    ``serve``)."""
    p.add_argument(
        "--model-name",
        default=None,
        help="name of the model in results and tables (default: the factory's name)",
    )
    p.add_argument(
        "--app-dir",
        type=Path,
        default=Path("."),
        help="folder searched first for MODULE (default: the working directory)",
    )
    p.add_argument(
        "--python",
        type=Path,
        default=None,
        metavar="PATH",
        help="run a python: model in this interpreter (its own environment: torch, CUDA, "
        "numpy as it pins them; nothing of streameval installed there), through the bridge "
        "(docs/evaluate-your-model.md#its-own-environment---python)",
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


def memory_loop_options(p: argparse.ArgumentParser) -> None:
    """``--suite``, ``--trajectory`` and ``--loop-seconds`` for ``demo`` and ``attach``."""
    from streameval.protocol.memory_loop import TRAJECTORIES

    p.add_argument(
        "--suite",
        default="worldmark",
        choices=["worldmark", MEMORY_LOOP_SUITE, SOAK_SUITE],
        help="key suite: worldmark (--actions), memory_loop (--trajectory) or soak (one "
        "continuous episode of --minutes, a served model only: the real-time verdict)",
    )
    p.add_argument(
        "--minutes",
        type=float,
        default=5.0,
        help="soak episode length in minutes (default 5; keys W D S A L R cycled, 20 s each)",
    )
    p.add_argument(
        "--trajectory",
        action="append",
        choices=list(TRAJECTORIES),
        help="memory_loop trajectory (repeatable; default: all six)",
    )
    p.add_argument(
        "--loop-seconds", type=float, default=60.0, help="memory_loop episode length (default 60)"
    )


def loop_plan(args: argparse.Namespace) -> LoopPlan:
    """The memory_loop part of a ``demo``/``attach`` command line."""
    trajectories = getattr(args, "trajectory", None)
    return LoopPlan(
        tuple(trajectories) if trajectories else None,
        getattr(args, "loop_seconds", MEMORY_LOOP_SECONDS),
    )


def parse_actions(text: str) -> list[int]:
    from streameval.protocol.suites import WORLDMARK

    bad = argparse.ArgumentTypeError(f"worldmark action ids are 1–15, got {text!r}")
    ids: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                lo, hi = part.split("-", 1)
                first, last = int(lo), int(hi)
                if not (min(WORLDMARK) <= first <= last <= max(WORLDMARK)):
                    raise bad  # checked before expanding: "1-10**18" stays cheap
                ids.extend(range(first, last + 1))
            elif part:
                ids.append(int(part))
    except ValueError:  # int() of what is not a number
        raise bad from None
    if not ids or any(i not in WORLDMARK for i in ids):
        raise bad
    return ids


def ranged(bound: Range) -> Callable[[str], float]:
    """An argparse type: a finite number inside ``bound`` (NaN, inf, 0 and -1 are refused)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        try:
            return bound.check(value, text)
        except BadInputError as exc:
            raise argparse.ArgumentTypeError(exc.problem) from None

    return parse


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes are one line naming the argument (docs/cli.md#bad-input), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"error: {self.prog}: {' '.join(message.split())}\n")


def quality_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--quality",
        default=None,
        help="Q-Align (OneAlign) for perceptual/aesthetic quality at episode end: "
        "qalign[:MODEL_DIR_OR_HUB_ID] (weights from a local path or the HF cache, default "
        "q-future/one-align); default: none, the two columns are not_applicable",
    )


LATENCY_BUDGET = Range("latency budget (s)", 0.001, 3600.0)
REALTIME_TARGET = Range("real-time target (fps)", 0.1, 1000.0)


def add_evaluation_options(p: argparse.ArgumentParser) -> None:
    """The options of every command that evaluates episodes: backends, live publishing,
    dashboard or plain output, verbosity."""
    p.add_argument(
        "--no-tui", action="store_true", help="plain progress lines instead of the dashboard"
    )
    p.add_argument(
        "--no-report",
        action="store_true",
        help="write scores, caches and recordings only, no report.html / index.html (batch "
        "runs; `streameval report OUT` writes them later from the results)",
    )
    add_backend_options(p)
    p.add_argument(
        "--publish-mqtt",
        default=None,
        metavar="URL",
        help="publish live scores on mqtt://HOST:PORT/SESSION (streameval/SESSION/scores) "
        "for `streameval dashboard --mqtt` elsewhere",
    )
    add_verbosity_options(p)


def add_backend_options(p: argparse.ArgumentParser) -> None:
    """The perception backends and the real-time budget (``pipeline_config``): the evaluating
    commands and ``doctor``, which checks what they name."""
    p.add_argument(
        "--flow",
        default="dis-fast",
        help="optical flow: dis-fast (default, CPU), dis-medium, dis-ultrafast, "
        "raft[:WEIGHTS.pth] / raft-small[:WEIGHTS.pth] (torchvision's RAFT weights, default "
        "file from the torch hub cache) or sea-raft:CHECKOUT_DIR (the reference's SEA-RAFT "
        "from a local checkout and its Spring-M weights); CUDA when available",
    )
    p.add_argument(
        "--embedding",
        default="cpu-colorhist-rbf",
        help="appearance backend for memory: cpu-colorhist-rbf (default, no weights) or "
        "dinov2-base[:MODEL_DIR_OR_HUB_ID] (weights from a local path or the HF cache)",
    )
    p.add_argument(
        "--gram",
        default="cpu-filterbank-gram",
        help="texture backend of memory_rendering_recovery (memory_loop): cpu-filterbank-gram "
        "(default, no weights), vgg16-gram[:CHECKPOINT] or vgg19-gram[:CHECKPOINT] "
        "(torchvision VGG weights from a local file or the torch hub cache)",
    )
    p.add_argument(
        "--depth",
        default=None,
        help="depth network for the strafe/turn fit when frames carry no depth: "
        "depth-anything[:MODEL_DIR_OR_HUB_ID] (weights from a local path or the HF "
        "cache); default: none, "
        "the depth-free estimator",
    )
    quality_option(p)
    p.add_argument(
        "--latency-budget",
        type=ranged(LATENCY_BUDGET),
        default=1.0,
        metavar="SECONDS",
        help="action-response budget of the real-time metrics (default 1 s, WorldAtlas's): "
        "action_response_latency is 1 − latency / budget, latency_budget_pass_rate the share "
        "of action changes answered within it; kept in the provenance, so rescore reuses it",
    )
    p.add_argument(
        "--realtime-target",
        type=ranged(REALTIME_TARGET),
        default=REALTIME_TARGET_FPS,
        metavar="FPS",
        help="native frames a second the real-time verdict asks of the worst 10 s window of a "
        "continuous stream of at least 60 s (default 16, LiveFrame's; scores.json runtime); "
        "kept in the provenance, so rescore reuses it",
    )
    p.add_argument(
        "--cuts",
        default="auto",
        help="shot-cut detector: auto (TransNetV2 when installed, else "
        "scenedetect-adaptive), transnetv2, scenedetect-adaptive, scenedetect-content",
    )


def pipeline_config(args: argparse.Namespace) -> PipelineConfig:
    """The backends and budget of ``add_evaluation_options``, as one ``PipelineConfig`` (every
    evaluating command builds it here, so an option cannot reach one command and not another)."""
    from streameval.engine.config import PipelineConfig

    return PipelineConfig(
        flow=args.flow,
        embedding=args.embedding,
        gram=args.gram,
        cuts=args.cuts,
        depth=args.depth,
        latency_budget_s=args.latency_budget,
        realtime_target_fps=args.realtime_target,
        quality=args.quality,
    )


def add_case_options(p: argparse.ArgumentParser) -> None:
    """``--cases``, ``--sets``, ``--images`` and ``--case-seed`` for ``demo`` and ``attach``: a
    benchmark's cases, each one episode that starts from its image (docs/run-worldmark.md)."""
    p.add_argument(
        "--cases",
        type=Path,
        default=None,
        metavar="PATH",
        help="run a benchmark's cases: WorldMark's arena_inputs/ folder, or a .jsonl manifest "
        "(one case a line: image, prompt, intrinsics, actions); each case is one episode that "
        "starts from its image, results in OUT/<model>/<set>/<case>/",
    )
    p.add_argument(
        "--sets",
        default=None,
        metavar="SETS",
        help="with --cases: the sets to run, e.g. first_view/real or first_view (default: all)",
    )
    p.add_argument(
        "--images",
        default=None,
        metavar="IDS",
        help="with --cases (arena_inputs): image numbers, e.g. 0-4,7 (default: all)",
    )
    p.add_argument(
        "--case-seed",
        type=int,
        default=0,
        metavar="N",
        help="with --cases: the seed of the case order (recorded in OUT/<model>/cases.json; "
        "default 0)",
    )
    p.add_argument(
        "--stop-when",
        default=None,
        metavar="RULE",
        help="with --cases: stop once the rule is met, checked before each case: 'width<=W' "
        "(every column's anytime-valid interval at most W points wide), "
        "'COLUMN:width<=W[,...]', or 'vs=DIR' (each column decided better / worse / within "
        "--margin of the finished case run in DIR, on the same cases); the cases not run are "
        "recorded, --resume without --stop-when runs them (docs/methods.md#running-intervals-"
        "over-a-case-run)",
    )
    p.add_argument(
        "--margin",
        type=float,
        default=None,
        metavar="POINTS",
        help="with --stop-when vs=DIR: points within which the two runs count as equal (default 1)",
    )


def case_selection(args: argparse.Namespace) -> CaseSelection | None:
    """The ``--cases`` part of a command line (None without ``--cases``); a case option
    without ``--cases`` is bad input, refused before anything runs."""
    from streameval.runs.cases import CaseSelection

    path = getattr(args, "cases", None)
    if path is None:
        for flag, value in (("--sets", args.sets), ("--images", args.images)):
            if value is not None:
                raise BadInputError(flag, "selects among cases: give --cases PATH too")
        return None
    actions = getattr(args, "actions", None)
    return CaseSelection(
        path,
        sets=args.sets,
        images=args.images,
        actions=",".join(map(str, actions)) if actions is not None else None,
        seed=args.case_seed,
    )

"""A benchmark's cases as jobs: one episode per case, in a seeded order, results by set.

``case_jobs`` turns a ``CaseSet`` (``streameval.cases``) into one ``EpisodeJob`` per case, for
any transport: the only transport-specific part is ``open_for_case(case, drive,
conditioning) -> Source``, which opens the model for one case, sends it the case's start
(``Conditioning``: the image, caption and intrinsics) and drives it with ``drive`` (the keys,
how long each is held; a memory_loop case's trajectory). Everything else is the same for an
in-process model, the procedural world and a server:

- the order is ``cases.case_order`` of the seed (recorded in ``OUT/<model>/cases.json`` with
  the case set's source, kind and selection, written when the first case starts);
- each case's results go to ``OUT/<model>/<set>/<case>/`` (``results.layout.case_dir``), so the
  existing keep / ``--overwrite`` / ``--resume`` policy (``runs.existing``) keeps finished cases
  and runs an incomplete one again: a resumed run loses none and runs none twice;
- each case that ends (complete or not) has its line in ``OUT/<model>/manifest.jsonl``, as
  WorldMark's output spec recommends: what was requested (case, keys, seconds per key, fps
  asked) and what arrived, measured (frames, seconds, delivered fps, resolution, the segments
  as the frames' own keys ran, the first chunk's length when the transport saw chunks) —
  never the nominal target reported as achieved. A rerun case replaces its line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streameval.core.atomic import write_json_atomic
from streameval.core.events import ChunkDone, EpisodeInfo, FrameEvent
from streameval.core.observers import EpisodeObserver, EpisodeOutcome
from streameval.core.source import Source
from streameval.errors import BadInputError
from streameval.inputs.numbers import check_frame_count
from streameval.protocol.memory_loop import (
    MEMORY_LOOP_FPS,
    MEMORY_LOOP_SUITE,
    TOKEN_KEY,
    TRAJECTORIES,
    MemoryLoop,
)
from streameval.protocol.schedule import Schedule, segments_from_keys
from streameval.replay.layout import CASE_RUN
from streameval.results.layout import case_dir, path_component
from streameval.results.results_log import upsert_line
from streameval.runs.jobs import EpisodeJob
from streameval.runs.memory_loop import LoopPlan

if TYPE_CHECKING:  # streameval.cases reads images with OpenCV: loaded when cases are run
    from streameval.cases.conditioning import Conditioning
    from streameval.cases.model import Case, CaseSet
    from streameval.runs.builders import RecordMode

CASES_FILE = CASE_RUN  # replay finds a case run's recordings by it
CASES_FORMAT = "streameval.cases/1"
MANIFEST_FILE = "manifest.jsonl"
CUSTOM_LOOP = "custom"  # the trajectory name of a memory_loop case given as a token list
ALL_LOOPS = LoopPlan()  # a memory_loop case without a trajectory takes the run's one


@dataclass(frozen=True, slots=True)
class CaseDrive:
    """How one case is driven: ``keys`` held in turn, ``seconds_per_key`` of video each.

    A memory_loop case has its ``loop`` (tokens, rate, duration): its keys are the tokens'
    keys and ``seconds_per_key`` a token's share of the loop, for transports that take keys
    and seconds; an in-process model takes ``schedule``.
    """

    keys: tuple[str, ...]
    seconds_per_key: float
    suite: str
    loop: MemoryLoop | None = None

    @property
    def trajectory(self) -> str | None:
        return None if self.loop is None else self.loop.name

    def schedule(self, fps: float) -> Schedule:
        """The frame schedule at ``fps`` (a loop keeps its own rate: ``loop.fps``)."""
        if self.loop is not None:
            return self.loop.schedule()
        return Schedule.per_key(self.keys, self.seconds_per_key, fps)


@dataclass(frozen=True, slots=True)
class CaseSelection:
    """Which cases a run takes: the case set at ``path`` narrowed by the ``--sets`` /
    ``--images`` / ``--actions`` text (None: all), in the order of ``seed``."""

    path: Path
    sets: str | None = None
    images: str | None = None
    actions: str | None = None
    seed: int | None = 0

    def load(self) -> CaseSet:
        """The selected cases, every file read and checked (``cases.load_cases``): a bad one
        is one ``BadInputError`` line, before any episode."""
        from streameval.cases import load_cases

        return load_cases(self.path, sets=self.sets, images=self.images, actions=self.actions)

    def record(self) -> dict[str, str | None]:
        """The selection as ``cases.json`` keeps it."""
        return {"sets": self.sets, "images": self.images, "actions": self.actions}


OpenForCase = Callable[["Case", CaseDrive, "Conditioning"], Source]
"""Opens the model for one case: a new session that starts from ``conditioning`` and is
driven by ``drive``. Called when the case's turn comes; may raise ``BadInputError``."""


def case_drive(
    case: Case, seconds_per_key: float, loops: LoopPlan = ALL_LOOPS, fps: float | None = None
) -> CaseDrive:
    """The drive of ``case``: its keys at ``seconds_per_key``; a memory_loop case's trajectory
    (its own, else the run's one ``--trajectory``) over ``loops.seconds`` at ``fps`` (default
    24, the memory_loop rate)."""
    if case.suite != MEMORY_LOOP_SUITE:
        if not case.keys:
            raise BadInputError(case.origin or case.key, f"case {case.key} has no keys")
        return CaseDrive(tuple(case.keys), seconds_per_key, case.suite)
    trajectory = case.trajectory
    if trajectory is None:
        chosen = loops.trajectories or ()
        if len(chosen) != 1:
            raise BadInputError(
                case.origin or case.key,
                f"memory_loop case {case.key} names no trajectory: give it one, or run with "
                "exactly one --trajectory",
            )
        trajectory = chosen[0]
    if isinstance(trajectory, str):
        name, tokens = trajectory, TRAJECTORIES[trajectory]
    else:
        name, tokens = CUSTOM_LOOP, tuple(trajectory)
    loop = MemoryLoop(name, tokens, float(fps or MEMORY_LOOP_FPS), float(loops.seconds))
    check_frame_count(loop.total_frames, "fps × --loop-seconds")
    keys = tuple(TOKEN_KEY[t] for t in tokens)
    return CaseDrive(keys, loop.token_seconds, MEMORY_LOOP_SUITE, loop)


@dataclass
class CaseRunRecord:
    """``OUT/<model>/cases.json``: which cases this run takes and in what order, written once,
    atomically, when the run's first case starts (a run refused before any episode leaves the
    former record in place)."""

    path: Path
    doc: dict[str, Any]
    written: bool = False

    def ensure_written(self) -> None:
        if self.written:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            self.path, {**self.doc, "written_at": datetime.now(UTC).isoformat(timespec="seconds")}
        )
        self.written = True


def case_jobs(
    case_set: CaseSet,
    out: Path,
    model_name: str,
    open_for_case: OpenForCase,
    seed: int | None = 0,
    *,
    seconds_per_key: float,
    loops: LoopPlan = ALL_LOOPS,
    fps: float | None = None,
    fps_asked: float | None = None,
    record: RecordMode = "lossless",
    selection: Mapping[str, str | None] | None = None,
    server_paths: tuple[tuple[str, str], ...] = (),
) -> list[EpisodeJob]:
    """One job per case of ``case_set`` in the seeded order (``seed`` None: as listed).

    ``open_for_case`` is the transport (see ``OpenForCase``); ``fps`` sets a memory_loop
    case's rate (default 24); ``fps_asked`` is the rate the run asked the model for, as the
    manifest reports it (None: the model's own). ``selection`` is the ``--sets`` /
    ``--images`` / ``--actions`` text, recorded in ``cases.json``. Every case's drive and
    results folder is checked here, before any episode starts.
    """
    from streameval.cases.conditioning import Conditioning
    from streameval.cases.select import case_order
    from streameval.runs.builders import recorders

    ordered, order = case_order(case_set.cases, seed)
    model_dir = out / path_component(model_name)
    drives = [case_drive(case, seconds_per_key, loops, fps) for case in ordered]
    run_record = CaseRunRecord(
        model_dir / CASES_FILE,
        {
            "format": CASES_FORMAT,
            "model": model_name,
            "source": str(case_set.source),
            "kind": case_set.kind,
            "selection": dict(selection or {}),
            "cases": len(ordered),
            "sets": {name: len(case_set.in_set(name)) for name in case_set.sets},
            "seconds_per_key": seconds_per_key,
            # the most segments a case can score: bounds a pooled column's running interval
            "max_keys": max((len(drive.keys) for drive in drives), default=1),
            **order,
        },
    )
    manifest = model_dir / MANIFEST_FILE
    jobs: list[EpisodeJob] = []
    for case, drive in zip(ordered, drives, strict=True):
        results_dir = case_dir(out, model_name, case)
        conditioning = Conditioning(case, seed or 0, server_paths)

        def open_source(
            case: Case = case, drive: CaseDrive = drive, conditioning: Conditioning = conditioning
        ) -> Source:
            run_record.ensure_written()
            return open_for_case(case, drive, conditioning)

        observers = [
            *recorders(results_dir, record),
            CaseManifestLine(manifest, case, drive, fps_asked, results_dir),
        ]
        jobs.append(EpisodeJob(case.name, open_source, results_dir, observers, case=case))
    return jobs


@dataclass
class CaseManifestLine(EpisodeObserver):
    """Writes one case's line of ``manifest.jsonl`` when its episode ends, from what arrived:
    the first frame's size, every frame's key (the segments as delivered), the first chunk,
    and the episode's own interactivity figures (arrivals, delivered fps)."""

    path: Path
    case: Case
    drive: CaseDrive
    fps_asked: float | None
    results_dir: Path
    size: tuple[int, int] | None = None
    frame_keys: list[str] = field(default_factory=list)
    first_chunk: int | None = None
    info: EpisodeInfo | None = None

    def on_start(self, info: EpisodeInfo) -> None:
        self.info = info

    def on_frame(self, event: FrameEvent) -> None:
        if self.size is None:
            self.size = (int(event.image.shape[1]), int(event.image.shape[0]))
        if event.index == len(self.frame_keys):
            self.frame_keys.append(event.key)

    def on_chunk(self, event: ChunkDone) -> None:
        if self.first_chunk is None:
            self.first_chunk = int(event.frames)

    def on_end(self, outcome: EpisodeOutcome) -> None:
        upsert_line(self.path, self.line(outcome))

    def line(self, outcome: EpisodeOutcome) -> dict[str, Any]:
        """The manifest entry (``model``, ``episode`` and ``results_dir`` key it, as in
        ``results.jsonl``: a rerun replaces it)."""
        case, drive, info = self.case, self.drive, outcome.info
        figures = outcome.interactivity
        frames = len(self.frame_keys)
        width, height = self.size if self.size is not None else (None, None)
        segments = [
            {"keys": s.key, "frames": [s.start, s.end]} for s in segments_from_keys(self.frame_keys)
        ]
        return {
            "model": info.model,
            "episode": info.episode,
            "results_dir": str(self.results_dir),
            "case": case.key,
            "set": case.set,
            "image": case.image_id,
            "action_id": case.action,
            "keys": "".join(drive.keys),
            "status": "complete" if outcome.complete else "incomplete",
            "requested": {
                "suite": drive.suite,
                "trajectory": drive.trajectory,
                "segments": len(drive.keys),
                "seconds_per_key": drive.seconds_per_key,
                "target_sec": drive.seconds_per_key * len(drive.keys),
                "fps": self.fps_asked,
                "frames": info.schedule.total_frames,
                "image_sha256": case.image_sha256,
                "prompt_sha256": case.prompt_sha256,
                "intrinsics": list(case.intrinsics) if case.intrinsics is not None else None,
            },
            "achieved": {
                "measured": True,
                "frames": frames,
                "sec": frames / info.fps if info.fps else None,
                "video_fps": info.fps,
                "delivered_fps": figures.get("delivered_fps"),
                "fps_source": "arrivals",
                "wall_seconds": figures.get("wall_seconds"),
                "width": width,
                "height": height,
                "first_chunk_frames": self.first_chunk,
            },
            "segments": segments,
            "conditioning": outcome.conditioning,
            "origin": case.origin or None,
        }


def check_reset_takes_images(model: Any, case_set: CaseSet, name: str, origin: str) -> None:
    """An in-process model given cases with images must take the image in its ``reset``
    (``reset(image=...)`` or ``**kwargs``): otherwise every case would run from wherever the
    model starts, its image silently dropped. One ``BadInputError`` before anything runs."""
    from streameval.transports.inprocess.driver import ALL_KEYWORDS, reset_keywords

    with_image = [case for case in case_set.cases if case.image_path is not None]
    if not with_image:
        return
    reset = getattr(model, "reset", None)
    accepted = reset_keywords(reset if callable(reset) else None)
    if accepted is ALL_KEYWORDS or "image" in accepted:
        return
    what = "has no reset()" if not callable(reset) else "has a reset() that takes no image"
    raise BadInputError(
        origin,
        f"model {name!r} {what}, but {len(with_image)} of the {len(case_set)} cases start from "
        "an image: give it reset(self, image=None, prompt=None, intrinsics=None) "
        "(docs/evaluate-your-model.md)",
    )


def model_case_jobs(
    model: Any,
    name: str,
    out: Path,
    case_set: CaseSet,
    *,
    seed: int | None = 0,
    seconds_per_key: float,
    loops: LoopPlan = ALL_LOOPS,
    fps: float | None = None,
    record: RecordMode = "lossless",
    step_timeout: float,
    origin: str,
    selection: Mapping[str, str | None] | None = None,
) -> list[EpisodeJob]:
    """The cases for an in-process model (``step(key) -> frame``): each case one episode,
    ``reset(image=, prompt=, intrinsics=)`` with the names its ``reset`` takes before its
    first step (``builders.model_jobs`` for the rest: the model's thread, ``step_timeout``, a
    model that hung is not driven again)."""
    from streameval.runs.python_model import model_fps, model_source_opener

    check_reset_takes_images(model, case_set, name, origin)
    open_model = model_source_opener(model, name, step_timeout=step_timeout, origin=origin)
    rate = model_fps(model, fps, origin)
    for case in case_set.cases:  # a schedule past the frame limit: refused before any episode
        drive = case_drive(case, seconds_per_key, loops, fps)
        check_frame_count(drive.schedule(rate).total_frames, "fps × seconds per key")

    def open_for_case(case: Case, drive: CaseDrive, conditioning: Conditioning) -> Source:
        return open_model(
            drive.schedule(rate),
            episode=case.name,
            suite=drive.suite,
            trajectory=drive.trajectory,
            conditioning=conditioning,
        )

    return case_jobs(
        case_set,
        out,
        name,
        open_for_case,
        seed,
        seconds_per_key=seconds_per_key,
        loops=loops,
        fps=fps,
        fps_asked=rate,
        record=record,
        selection=selection,
    )


def demo_case_jobs(
    out: Path,
    case_set: CaseSet,
    *,
    defect: str = "clean",
    world_seed: int = 0,
    seed: int | None = 0,
    seconds_per_key: float,
    loops: LoopPlan = ALL_LOOPS,
    record: RecordMode = "lossless",
    selection: Mapping[str, str | None] | None = None,
) -> list[EpisodeJob]:
    """The procedural world (with ``defect``) on every case: a fresh world per case, reset
    to start from the case image (``reset(image=, prompt=)``: the image stands as a picture
    across the start view, so the first frame is the image and the keys move over it)."""
    from streameval.runs.memory_loop import LOOP_STEP_M
    from streameval.transports.inprocess.driver import InProcessSource
    from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

    try:
        world_config = world_config_for_defect(defect, seed=world_seed)
    except ValueError as exc:
        raise BadInputError("--defect", str(exc)) from None
    name = f"procedural-world[{defect}]"

    def open_for_case(case: Case, drive: CaseDrive, conditioning: Conditioning) -> Source:
        config = world_config
        if drive.loop is not None:  # one pan token turns 30 degrees, one push token one step
            loop = drive.loop
            config = replace(
                config,
                fps=loop.fps,
                yaw_rate_deg=loop.yaw_rate_deg,
                forward_speed=loop.speed(LOOP_STEP_M),
            )
        world = ProceduralWorld(config)
        return InProcessSource(
            world,
            drive.schedule(world.fps),
            episode=case.name,
            model_name=name,
            suite=drive.suite,
            width=world.width,
            height=world.height,
            trajectory=drive.trajectory,
            conditioning=conditioning,
        )

    return case_jobs(
        case_set,
        out,
        name,
        open_for_case,
        seed,
        seconds_per_key=seconds_per_key,
        loops=loops,
        fps_asked=world_config.fps,
        record=record,
        selection=selection,
    )

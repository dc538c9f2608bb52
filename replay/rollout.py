"""A recorded episode, validated and described, ready to be streamed as a ``Source``.

``Rollout`` is what every reader returns (our rollout directory here, deliveries in
``replay/delivery.py``, other layouts in ``replay/adapters.py``). It holds what is small (per-frame
keys, poses, intrinsics) and points at what is large (the video, the depth maps), which are read
while streaming. ``read_rollout_dir`` reads the layout of docs/cli.md#rollout-directory:

    meta.json       {"format": "streameval.rollout/1", "fps", "suite", "model", ...}
    video.*         any container PyAV decodes, or frames/000000.png ...
    actions.jsonl   {"frame": i, "key": "W"} per frame (+ "t_wall" when recorded live)
    keys.jsonl      optional: every keystroke sent live
    poses.npy, intrinsics.npy, depth_metric.npy, depth_valid_mask.npz   optional sidecars

``meta.json`` may also say ``"episode"`` (default: the directory name) and ``"complete": false``
(a recording that stopped early), which the replay reports as an incomplete episode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streameval.protocol.schedule import Schedule, segments_from_keys
from streameval.replay.actionlog import (
    ActionLog,
    read_actions_jsonl,
    read_chunks_jsonl,
    read_keys_jsonl,
)
from streameval.replay.frames import (
    FrameStore,
    PngFrames,
    VideoFrames,
    list_frame_files,
    probe_video,
    read_png,
)
from streameval.replay.layout import (
    ACTIONS,
    CHUNKS,
    FRAMES_DIR,
    KEYS,
    META,
    ROLLOUT_FORMAT,
    VIDEO_STEM,
    VIDEO_SUFFIXES,
    present,
    read_json,
)
from streameval.replay.sidecars import Sidecars, load_sidecars

from streameval.core.events import ChunkDone, EpisodeInfo, KeySent
from streameval.errors import BadInputError, FrameReadError
from streameval.inputs.numbers import FPS, check_frame_count
from streameval.inputs.schema import META_SCHEMA, validate


@dataclass(frozen=True, slots=True, eq=False)
class Rollout:
    """One episode on disk. ``frame_keys`` is the authority on how many frames it has."""

    path: Path
    layout: str  # "rollout" | "delivery" | "adapter": which reader understood it
    episode: str
    model: str
    suite: str
    fps: float
    width: int
    height: int
    frames: FrameStore
    frame_keys: tuple[str, ...]
    schedule: Schedule
    t_wall: tuple[float | None, ...] | None = None
    keys_sent: tuple[KeySent, ...] = ()
    chunks: tuple[ChunkDone, ...] = ()  # chunk boundaries a live run saw (chunks.jsonl)
    sidecars: Sidecars | None = None
    complete: bool = True  # False when the recording itself says it stopped early
    reason: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def frame_count(self) -> int:
        return len(self.frame_keys)

    def info(self) -> EpisodeInfo:
        """The ``EpisodeStart`` payload; ``extra`` = the metadata, the layout, the sidecars."""
        sidecars = self.sidecars.present() if self.sidecars is not None else []
        return EpisodeInfo(
            episode=self.episode,
            model=self.model,
            suite=self.suite,
            fps=self.fps,
            schedule=self.schedule,
            source=str(self.path),
            width=self.width,
            height=self.height,
            # Depth on replayed frames always comes from a sidecar file (the depth-source order
            # of docs/methods.md#motion-type-fit).
            extra={
                **self.meta,
                "layout": self.layout,
                "sidecars": sidecars,
                "depth_source": "sidecar",
                "sidecar_problems": self.sidecars.problems_by_kind() if self.sidecars else {},
            },
        )


def schedule_from_keys(frame_keys: tuple[str, ...], fps: float) -> Schedule:
    """The schedule an action log implies: one segment per maximal run of one key."""
    segments = segments_from_keys(frame_keys)
    return Schedule(
        keys=tuple(s.key for s in segments),
        fps=float(fps),
        boundaries=(0, *(s.end for s in segments)),
    )


def check_log_covers_video(log_path: Path, log_frames: int, video: Path, video_frames: int) -> None:
    """An action log shorter than its video leaves frames without a key: refuse up front.

    A log longer than the video is a truncated video; that surfaces while streaming (the frames
    that exist are still scored, the episode is marked incomplete).
    """
    if log_frames < video_frames:
        raise BadInputError(
            log_path, f"{log_frames} frames in the log but {video_frames} in {video.name}"
        )


# meta.json's fps may differ from the video's own steady rate by this share (rounding in a
# container's time base, 29.97 written as 30); beyond it the recording's times are not the
# video's, and scoring at either rate would be wrong.
FPS_TOLERANCE = 0.05


def check_meta_fps(meta_path: Path, fps: float, video: Path, video_fps: float | None) -> None:
    """Refuse a meta.json ``fps`` that the video's own steady frame rate contradicts.

    ``video_fps`` None (no reliable rate: variable frame rate, no timing) is never refused.
    """
    if video_fps is not None and abs(fps - video_fps) > FPS_TOLERANCE * video_fps:
        raise BadInputError(
            meta_path,
            f"fps {fps:g} but {video.name} runs at {video_fps:.4g} fps "
            f"(more than {FPS_TOLERANCE:.0%} apart)",
        )


def _read_meta(path: Path) -> dict[str, Any]:
    meta = read_json(path)
    if not isinstance(meta, dict):
        raise BadInputError(path, "expected a JSON object")
    if meta.get("format") != ROLLOUT_FORMAT:
        raise BadInputError(path, f"format {meta.get('format')!r}, expected {ROLLOUT_FORMAT!r}")
    FPS.check(meta.get("fps"), path)
    for name in ("model", "suite"):
        if not isinstance(meta.get(name), str) or not meta[name]:
            raise BadInputError(path, f"{name!r} must be a non-empty string")
    for name in ("episode", "reason"):
        if meta.get(name) is not None and not isinstance(meta[name], str):
            raise BadInputError(path, f"{name!r} must be a string")
    if not isinstance(meta.get("complete", True), bool):
        raise BadInputError(path, "'complete' must be true or false")
    validate(meta, META_SCHEMA, path)  # the published schema: sizes, lengths, types
    return meta


def _frame_store(directory: Path, fps: float) -> tuple[FrameStore, int, int, int]:
    """(store, width, height, frame count) of ``video.*`` or ``frames/``; a video's own steady
    frame rate must agree with meta.json's ``fps`` (``check_meta_fps``)."""
    videos = sorted(
        p
        for p in directory.glob(f"{VIDEO_STEM}.*")
        if p.suffix.lower() in VIDEO_SUFFIXES and p.is_file()
    )
    frames_dir = directory / FRAMES_DIR
    if len(videos) > 1:
        raise BadInputError(directory, f"several videos ({', '.join(p.name for p in videos)})")
    if videos and frames_dir.is_dir():
        raise BadInputError(directory, f"both {videos[0].name} and {FRAMES_DIR}/: keep one")
    if videos:
        probe = probe_video(videos[0])
        check_meta_fps(directory / META, fps, videos[0], probe.steady_fps)
        return VideoFrames(videos[0]), probe.width, probe.height, probe.frames
    if frames_dir.is_dir():
        files = list_frame_files(frames_dir)
        try:
            first = read_png(files[0], 0)
        except FrameReadError as exc:
            raise BadInputError(exc.path, exc.problem) from None
        height, width = first.shape[:2]
        return PngFrames(frames_dir, tuple(files)), width, height, len(files)
    raise BadInputError(directory, f"no video ({VIDEO_STEM}.mp4, ...) and no {FRAMES_DIR}/")


def read_rollout_dir(directory: Path) -> Rollout:
    """Read and validate a rollout directory (docs/cli.md#rollout-directory); ``BadInputError``
    names the bad file."""
    meta_path = directory / META
    if not meta_path.is_file():
        raise BadInputError(meta_path, "is not a regular file" if present(meta_path) else "missing")
    meta = _read_meta(meta_path)
    store, width, height, stored_frames = _frame_store(directory, float(meta["fps"]))
    for name, value in (("width", width), ("height", height)):
        if meta.get(name) is not None and meta[name] != value:
            raise BadInputError(meta_path, f"{name} {meta[name]} but {store.path.name} has {value}")
    actions_path = directory / ACTIONS
    if not present(actions_path):
        raise BadInputError(directory, f"no {ACTIONS}")
    log: ActionLog = read_actions_jsonl(actions_path)
    check_log_covers_video(actions_path, len(log), store.path, stored_frames)
    check_frame_count(len(log), actions_path)
    keys_path = directory / KEYS
    chunks_path = directory / CHUNKS
    fps = float(meta["fps"])
    return Rollout(
        path=directory,
        layout="rollout",
        episode=meta.get("episode") or directory.name,
        model=meta["model"],
        suite=meta["suite"],
        fps=fps,
        width=width,
        height=height,
        frames=store,
        frame_keys=log.keys,
        schedule=schedule_from_keys(log.keys, fps),
        t_wall=log.t_wall,
        keys_sent=read_keys_jsonl(keys_path) if present(keys_path) else (),
        chunks=read_chunks_jsonl(chunks_path) if present(chunks_path) else (),
        sidecars=load_sidecars(directory, len(log)),
        complete=bool(meta.get("complete", True)),
        reason=meta.get("reason"),
        meta=meta,
    )

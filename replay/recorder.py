"""Record an episode as a rollout directory (docs/cli.md#rollout-directory) that replays
bit-identically.

What a ``ReplaySource`` of the directory yields equals what was recorded: the same pixels
(lossless ``video.mp4``, ``replay/encoder.py``), keys, wall times, keystrokes, poses, intrinsics
and depth. Memory stays flat however long the episode: frames stream to the encoder, depth maps
to a growing ``.npy`` (``replay/npyappend.py``); only poses and intrinsics (tiny) accumulate.
``actions.jsonl`` and ``keys.jsonl`` are written and flushed line by line, and ``meta.json`` says
``"complete": false`` until ``close`` rewrites it, so a crash leaves a replayable, honestly
labelled partial recording.

A sidecar is all or nothing: poses (or intrinsics, or depth) are written only if every frame
carried one; otherwise ``meta.json`` lists it under ``"sidecars_dropped"`` with the reason.
Depth is stored exactly as the model sent it (NaN and +inf included) and no valid mask is
written: the reader would turn masked pixels into NaN, and +inf (sky) must come back as +inf.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt
from streameval.protocol.keys import parse_key
from streameval.replay.encoder import LosslessVideoWriter
from streameval.replay.layout import (
    ACTIONS,
    CHUNKS,
    DEPTH,
    DEPTH_MASK,
    INTRINSICS,
    KEYS,
    META,
    POSES,
    RECORDED_VIDEO,
    ROLLOUT_FORMAT,
)
from streameval.replay.npyappend import NpyAppender

from streameval.core.arrays import F64
from streameval.core.atomic import write_json_atomic
from streameval.core.events import ChunkDone, EpisodeInfo, FrameEvent, KeySent
from streameval.errors import BadInputError, UnknownKeyError


def _remove_previous_recording(out_dir: Path) -> None:
    """Delete the files a former recording left (a stale poses.npy must not outlive it).

    Only the names of our layout are touched; anything else in the directory stays.
    """
    names = (
        META,
        RECORDED_VIDEO,
        ACTIONS,
        KEYS,
        CHUNKS,
        POSES,
        INTRINSICS,
        DEPTH,
        DEPTH_MASK,
        DEPTH + ".part",
        META + ".tmp",
    )
    for name in names:
        (out_dir / name).unlink(missing_ok=True)


class _Sidecar:
    """Per-frame matrices that must come with every frame to be worth writing."""

    def __init__(self, name: str, shape: tuple[int, ...]) -> None:
        self.name = name
        self.shape = shape
        self.values: list[F64] = []
        self.missing_from: int | None = None
        self.seen = False  # any frame carried one: a gap is then worth reporting

    def add(self, index: int, value: object | None, source: str) -> None:
        self.seen = self.seen or value is not None
        if self.missing_from is not None:
            return
        if value is None:
            self.missing_from = index
            self.values.clear()
            return
        arr = np.array(value, dtype=np.float64)
        if arr.shape != self.shape:
            raise BadInputError(
                source, f"frame {index}: {self.name} has shape {arr.shape}, expected {self.shape}"
            )
        self.values.append(arr)


class Recorder:
    """Writes one episode to ``out_dir`` as it streams by.

    Call ``add_frame`` for every frame in order (0, 1, 2, ...) and ``add_key`` for every
    keystroke sent, then ``close(complete)``. ``source`` names the input in errors (a model URL,
    say); by default the output directory. A former recording in ``out_dir`` is replaced (a
    re-run into the same results directory), unless ``overwrite=False``, which refuses.

    ``add_frame`` keeps a reference to the image until it is encoded: do not modify it after.
    """

    def __init__(
        self,
        out_dir: Path,
        fps: float,
        model: str,
        suite: str,
        *,
        episode: str | None = None,
        trajectory: str | None = None,
        extra: dict[str, Any] | None = None,
        source: str | None = None,
        overwrite: bool = True,
        lossy: bool = False,
    ) -> None:
        if not (math.isfinite(fps) and fps > 0):
            raise ValueError(f"fps must be a positive number, got {fps}")
        self.out_dir = Path(out_dir)
        self.fps = float(fps)
        self.source = source or str(self.out_dir)
        if (self.out_dir / META).exists():
            if not overwrite:
                raise BadInputError(
                    self.out_dir, "already holds a rollout (meta.json); choose another directory"
                )
            _remove_previous_recording(self.out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._meta: dict[str, Any] = {
            **(extra or {}),
            "format": ROLLOUT_FORMAT,
            "fps": self.fps,
            "suite": suite,
            "trajectory": trajectory,
            "model": model,
            "episode": episode or self.out_dir.name,
            "width": None,
            "height": None,
            "frames": None,
            "complete": False,
            "reason": "recording in progress",
            "recorded_at": time.time(),
            "video_quality": "lossy" if lossy else "lossless",
        }
        self._write_meta()
        self._video = LosslessVideoWriter(self.out_dir / RECORDED_VIDEO, self.fps, lossy=lossy)
        self._actions: IO[str] = (self.out_dir / ACTIONS).open("w", encoding="utf-8")
        self._keys: IO[str] = (self.out_dir / KEYS).open("w", encoding="utf-8")
        self._chunks: IO[str] | None = None  # chunks.jsonl, opened at the first chunk
        self._poses = _Sidecar("pose", (4, 4))
        self._intrinsics = _Sidecar("intrinsics", (3, 3))
        self._depth = NpyAppender(self.out_dir / DEPTH, np.float32)
        self._depth_missing_from: int | None = None
        self._depth_seen = False
        self._size: tuple[int, int] | None = None
        self.frames = 0
        self.closed = False

    @classmethod
    def for_episode(cls, out_dir: Path, info: EpisodeInfo, **kwargs: Any) -> Recorder:
        """A recorder for the episode an ``EpisodeStart`` announced."""
        trajectory = info.extra.get("trajectory")
        return cls(
            out_dir,
            info.fps,
            info.model,
            info.suite,
            episode=info.episode,
            trajectory=trajectory if isinstance(trajectory, str) else None,
            source=info.source,
            **kwargs,
        )

    def _write_meta(self) -> None:
        write_json_atomic(self.out_dir / META, self._meta, allow_nan=True, default=str)

    def _check_frame(self, event: FrameEvent) -> str:
        if self.closed:
            raise RuntimeError(f"{self.out_dir}: recorder is closed")
        if event.index != self.frames:
            raise BadInputError(
                self.source,
                f"frame {event.index} arrived after frame "
                f"{self.frames - 1}: a recording needs every frame",
            )
        image = event.image
        if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
            raise BadInputError(
                self.source,
                f"frame {event.index} is {image.shape} {image.dtype}, expected H×W×3 uint8",
            )
        size = (int(image.shape[1]), int(image.shape[0]))
        if self._size is None:
            self._size = size
            self._meta["width"], self._meta["height"] = size
            self._write_meta()
        elif size != self._size:
            first = f"{self._size[0]}×{self._size[1]}"
            raise BadInputError(
                self.source,
                f"frame {event.index} is {size[0]}×{size[1]}, the episode's frames are {first}",
            )
        try:
            return parse_key(event.key)
        except UnknownKeyError as exc:
            raise BadInputError(self.source, f"frame {event.index}: {exc}") from None

    def add_frame(self, event: FrameEvent) -> None:
        """Record one frame; it must be the next index and the size of the first frame."""
        key = self._check_frame(event)
        self._video.write(np.ascontiguousarray(event.image))
        line: dict[str, Any] = {"frame": event.index, "key": key}
        if event.t_wall is not None and math.isfinite(event.t_wall):
            line["t_wall"] = event.t_wall
        self._actions.write(json.dumps(line) + "\n")
        self._actions.flush()
        self._poses.add(event.index, event.pose, self.source)
        self._intrinsics.add(event.index, event.intrinsics, self.source)
        self._add_depth(event.index, event.depth)
        self.frames += 1

    def _add_depth(self, index: int, depth: npt.NDArray[np.float32] | None) -> None:
        self._depth_seen = self._depth_seen or depth is not None
        if self._depth_missing_from is not None:
            return
        if depth is None:
            self._depth_missing_from = index
            self._depth.discard()
            return
        if depth.ndim != 2:
            raise BadInputError(
                self.source, f"frame {index}: depth has shape {depth.shape}, expected h×w"
            )
        try:
            self._depth.append(depth)
        except ValueError as exc:
            raise BadInputError(self.source, f"frame {index}: depth {exc}") from None

    def add_key(self, event: KeySent) -> None:
        """Record one keystroke the driver sent (written and flushed at once)."""
        try:
            key = parse_key(event.key)
        except UnknownKeyError as exc:
            raise BadInputError(self.source, f"keystroke for frame {event.frame}: {exc}") from None
        if event.frame < 0 or not math.isfinite(event.t_wall):
            raise BadInputError(
                self.source,
                f"keystroke {key} for frame {event.frame} at "
                f"{event.t_wall}: needs a frame >= 0 and a wall time",
            )
        line = {"key": key, "frame": event.frame, "t_wall": event.t_wall}
        self._keys.write(json.dumps(line) + "\n")
        self._keys.flush()

    def add_chunk(self, event: ChunkDone) -> None:
        """Record one chunk boundary and the server's statistics for it (``chunks.jsonl``,
        written and flushed at once), so that a replay has the same chunks as the live run."""
        if self.closed:
            raise RuntimeError(f"{self.out_dir}: recorder is closed")
        if self._chunks is None:
            self._chunks = (self.out_dir / CHUNKS).open("w", encoding="utf-8")
        self._chunks.write(json.dumps(event.to_json()) + "\n")
        self._chunks.flush()

    def _finish_matrices(self, side: _Sidecar, path: Path, dropped: dict[str, str]) -> None:
        if self.frames == 0:
            return
        if side.missing_from is not None:
            if side.seen:
                dropped[path.name] = f"frame {side.missing_from} had no {side.name}"
            return
        stack = np.stack(side.values)
        if side.name == "intrinsics" and (stack == stack[0]).all():
            stack = stack[0]  # one camera for the whole episode: (3, 3), as ViPE writes it
        np.save(path, stack)

    def _finish_depth(self, dropped: dict[str, str]) -> None:
        if self._depth_missing_from is not None:
            if self._depth_seen:
                dropped[DEPTH] = f"frame {self._depth_missing_from} had no depth"
            return
        self._depth.finish()

    def close(
        self,
        complete: bool,
        reason: str | None = None,
        *,
        perception: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Finish every file and rewrite ``meta.json`` with the frame count and ``complete``;
        ``perception``: the frames the live run sampled and dropped (``perception_plan``), so
        that a replay of this recording perceives the same frames; ``extra``: more fields the
        episode learnt while it ran (a case's first-frame check)."""
        if self.closed:
            return
        self.closed = True
        error: BaseException | None = None
        try:
            self._video.close()
        except RuntimeError as exc:
            error, complete = exc, False
            reason = reason or str(exc)
        self._actions.close()
        self._keys.close()
        if self._chunks is not None:
            self._chunks.close()
        dropped: dict[str, str] = {}
        self._finish_matrices(self._poses, self.out_dir / POSES, dropped)
        self._finish_matrices(self._intrinsics, self.out_dir / INTRINSICS, dropped)
        self._finish_depth(dropped)
        self._meta.update(
            frames=self.frames,
            complete=bool(complete),
            reason=None if complete else (reason or "stopped early"),
        )
        if dropped:
            self._meta["sidecars_dropped"] = dropped
        if perception:
            self._meta["perception"] = perception
        if extra:
            self._meta.update(extra)
        self._write_meta()
        if error is not None:
            raise error

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        reason = None if exc_type is None else f"{exc_type.__name__}: {exc}"
        self.close(complete=exc is None, reason=reason)

"""What the pipeline keeps of an episode while it runs: signals, keys, fit samples, and a
memory_loop episode's WorldAtlas state (poses, coarse depth, the revisit frames).

Growable float64 arrays (amortised doubling) so memory is a few bytes per frame; the only
frames kept are Q-Align's, one per second, shrunk to 448 px (``quality_cache``).
``to_cache`` hands the exact arrays to scoring, which is why final scores equal ``rescore``
bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.constants import FLOW_STRIDE
from streameval.core.episode.cache import EpisodeCache, MemoryCache
from streameval.core.episode.closed_loop import ClosedLoopFrames
from streameval.core.episode.motion import FitSample
from streameval.core.episode.worldatlas import WorldAtlasCache
from streameval.core.events import EpisodeInfo, FrameEvent
from streameval.core.growable import GrowableArray
from streameval.metrics.fits.geometry import intrinsics_for_depth
from streameval.metrics.worldatlas.gate_online import OnlineReturnGate
from streameval.perception.pose_estimator import CpuPoseEstimator
from streameval.protocol.memory_loop import TRAJECTORIES
from streameval.results.cache.closed_loop import CLOSED_LOOP_FRAME_SIDE


@dataclass
class GrowableRows:
    """Row ``i`` = frame ``i``'s embedding (or imaging statistics); frames never seen stay
    NaN (amortised growth)."""

    dtype: type[np.floating[Any]] = np.float32
    _data: npt.NDArray[Any] | None = None
    _size: int = 0

    def set(self, index: int, row: npt.NDArray[Any]) -> None:
        if self._data is None:
            self._data = np.full((256, row.size), np.nan, dtype=self.dtype)
        if index >= self._data.shape[0]:
            grown = np.full(
                (max(index + 1, 2 * self._data.shape[0]), self._data.shape[1]), np.nan, self.dtype
            )
            grown[: self._size] = self._data[: self._size]
            self._data = grown
        self._data[index] = row
        self._size = max(self._size, index + 1)

    def view(self, n_frames: int) -> npt.NDArray[Any] | None:
        """The first ``n_frames`` rows (NaN-padded), or None when nothing was set."""
        if self._data is None:
            return None
        out = np.full((n_frames, self._data.shape[1]), np.nan, dtype=self.dtype)
        n = min(n_frames, self._size)
        out[:n] = self._data[:n]
        return out


@dataclass
class EpisodeTrack:
    """Per-episode state the pipeline accumulates."""

    meta: dict[str, Any]
    sx: GrowableArray = field(default_factory=lambda: GrowableArray(np.float64))
    srad: GrowableArray = field(default_factory=lambda: GrowableArray(np.float64))
    frame_keys: list[str] = field(default_factory=list)
    fit_samples: list[FitSample] = field(default_factory=list)
    depth_frames_used: int = 0
    embeddings: GrowableRows = field(default_factory=GrowableRows)
    statistics: GrowableRows = field(default_factory=lambda: GrowableRows(np.float64))
    quality_frames: dict[int, npt.NDArray[np.uint8]] = field(default_factory=dict)
    worldatlas: WorldAtlasTrack | None = None  # memory_loop episodes only

    def set_frame_key(self, index: int, key: str, fill: Callable[[int], str]) -> bool:
        """Record the key of frame ``index``; a frame skipped before it (dropped or rejected)
        gets ``fill(its index)``. True when a key already recorded (a gap's fill) changed:
        incremental state built on it is stale."""
        while len(self.frame_keys) < index:
            self.frame_keys.append(fill(len(self.frame_keys)))
        if len(self.frame_keys) == index:
            self.frame_keys.append(key)
            return False
        changed = self.frame_keys[index] != key
        self.frame_keys[index] = key
        return changed

    def pad_to(self, n_frames: int, fill: Callable[[int], str]) -> None:
        """Extend the episode to ``n_frames`` frames received, the ones never perceived at its
        end (a live source's trailing drops) keyed by ``fill`` and their signals missing (NaN),
        as a dropped frame inside the episode is: its segments keep their real ends."""
        while len(self.frame_keys) < n_frames:
            self.frame_keys.append(fill(len(self.frame_keys)))
        n_signals = max(0, len(self.frame_keys) - FLOW_STRIDE)
        for signal in (self.sx, self.srad):
            if len(signal) < n_signals:
                signal.extend(np.full(n_signals - len(signal), np.nan))

    def replace_fit_samples(self, kept: list[FitSample]) -> bool:
        """Keep only ``kept`` (a subset of the fit samples); True when any went."""
        if len(kept) == len(self.fit_samples):
            return False
        went = {s.frame for s in self.fit_samples} - {s.frame for s in kept}
        self.depth_frames_used -= sum(
            1 for s in self.fit_samples if s.frame in went and s.invz is not None
        )
        self.fit_samples = kept
        return True

    def to_cache(
        self, extra_meta: dict[str, Any] | None = None, memory: MemoryCache | None = None
    ) -> EpisodeCache:
        n_signals = max(0, len(self.frame_keys) - 2)
        sx = self.sx.view()[:n_signals].astype(np.float64)
        srad = self.srad.view()[:n_signals].astype(np.float64)
        return EpisodeCache(
            meta={**self.meta, **(extra_meta or {})},
            frame_keys=list(self.frame_keys),
            sx=sx,
            srad=srad,
            fit_samples=list(self.fit_samples),
            memory=memory,
            worldatlas=(
                self.worldatlas.to_cache(len(self.frame_keys))
                if self.worldatlas is not None
                else None
            ),
        )


# --- WorldAtlas state of a memory_loop episode -----------------------------------------
# What a memory_loop episode keeps for WorldAtlas scoring, and its cache file.
#
# Per frame: the camera-to-world pose (NaN rows where none came) and a coarse z-depth map with
# its own intrinsics. Depth is thinned by an integer stride to at most ``DEPTH_WIDTH`` columns
# (about 2,300 points a frame, under WorldAtlas's 4,096 per frame, so every kept pixel is used)
# and stored as float16: 1,440 frames fit in a few MB, and ``rescore`` reads exactly the arrays
# the live run scored, so scores are bit-identical.
#
# Every frame is also kept, shrunk to a longer side of 320 px and JPEG-encoded (quality 95,
# about 30 kB and under 1 ms a frame: 45 MB for a 60 s loop), because which frames the
# closed-loop metrics pair is known only once the whole pose track is
# (docs/methods.md#memory_return_gate). At episode end only the ≤ 48 frames of the scored pairs
# are decoded and kept, losslessly, in the cache (``engine/closed_loop_frames.py``).


DEPTH_WIDTH = 64
FRAME_JPEG_QUALITY = 95


def shrink_frame(
    image: npt.NDArray[np.uint8], intrinsics: npt.ArrayLike | None
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float64] | None]:
    """The frame with its longer side at most ``CLOSED_LOOP_FRAME_SIDE`` (INTER_AREA), and its
    intrinsics at that size (pixel centres: u' = (u + 0.5)·s − 0.5)."""
    import cv2

    h, w = image.shape[:2]
    scale = min(1.0, CLOSED_LOOP_FRAME_SIDE / max(h, w))
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    small = image if scale >= 1.0 else cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    k = None
    if intrinsics is not None:
        sx, sy = size[0] / w, size[1] / h
        k = np.array(intrinsics, dtype=np.float64).reshape(3, 3)
        k[0, 0] *= sx
        k[0, 1] *= sx
        k[0, 2] = (k[0, 2] + 0.5) * sx - 0.5
        k[1, 1] *= sy
        k[1, 2] = (k[1, 2] + 0.5) * sy - 0.5
    return np.ascontiguousarray(small, dtype=np.uint8), k


def trajectory_of(info: EpisodeInfo) -> str | None:
    """The memory_loop trajectory of an episode: what the source says (the driver, a
    rollout's meta.json), else the episode name when it is one (network transports name the
    episode after the trajectory but carry no extra fields)."""
    named = info.extra.get("trajectory")
    if isinstance(named, str) and named:
        return named
    return info.episode if info.episode in TRAJECTORIES else None


def coarse_depth(
    depth: npt.ArrayLike, intrinsics: npt.ArrayLike, image_size: tuple[int, int]
) -> tuple[npt.NDArray[np.float16], npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
    """Depth thinned by an integer stride, its validity, and the intrinsics of the thinned map.

    Keeping pixel (s u', s v') means x = (s u' - cx) z / fx = (u' - cx/s) z / (fx/s).
    """
    d = np.asarray(depth, dtype=np.float64)
    k = intrinsics_for_depth(intrinsics, image_size, (d.shape[0], d.shape[1]))
    stride = max(1, -(-d.shape[1] // DEPTH_WIDTH))
    thin = d[::stride, ::stride]
    k = k.copy()
    k[0, 0] /= stride
    k[1, 1] /= stride
    k[0, 2] /= stride
    k[1, 2] /= stride
    valid = np.isfinite(thin) & (thin > 0) & (thin < 65000.0)  # float16 range
    return np.where(valid, thin, 0.0).astype(np.float16), valid, k


@dataclass
class WorldAtlasTrack:
    """Accumulates poses and coarse depth frame by frame (pipeline thread)."""

    pose_source: str = "none"
    poses: dict[int, npt.NDArray[np.float64]] = field(default_factory=dict)
    depth: dict[
        int, tuple[npt.NDArray[np.float16], npt.NDArray[np.bool_], npt.NDArray[np.float64]]
    ] = field(default_factory=dict)

    estimator: CpuPoseEstimator | None = None
    fps: float | None = None
    """The episode's frame rate: given, the provisional return gate follows the poses."""
    gate: OnlineReturnGate | None = None
    problems: dict[str, str] = field(default_factory=dict)
    """Unusable sidecars of a replay (``poses`` / ``depth``: "<file>: <what is wrong>"): the
    metrics that need them are ``missing`` with that reason (``scores.worldatlas_metrics``)."""
    keep_frames: bool = True
    frames: dict[int, bytes] = field(default_factory=dict)
    """Every frame, shrunk and JPEG-encoded (module docstring), for the closed-loop pairs."""
    frame_intrinsics: dict[int, npt.NDArray[np.float64]] = field(default_factory=dict)
    closed_loop: ClosedLoopFrames | None = None
    """The scored pairs' frames and backend answers, set at episode end."""

    def __post_init__(self) -> None:
        if self.gate is None and self.fps is not None:
            self.gate = OnlineReturnGate(self.fps)

    def add_frame(self, event: FrameEvent, from_sidecar: bool) -> None:
        """Record one frame. The pose source is fixed by the first frame: poses the model sent
        (or a ViPE sidecar on replay), else our CPU estimator on every frame (it needs them in
        order; it runs on the caller's thread, 8-14 ms of CPU a frame at 320 px)."""
        pose = event.pose
        # Poses that were given but unusable are not replaced by an estimate: the pose
        # metrics say so instead of scoring something the user did not ask for.
        estimate = "poses" not in self.problems
        if pose is None and estimate and (self.estimator is not None or not self.poses):
            if self.estimator is None:
                self.estimator = CpuPoseEstimator(intrinsics=event.intrinsics)
            pose = self.estimator.update(event.image)
            source = self.estimator.name
        else:
            source = "vipe_sidecar" if from_sidecar else "model"
        size = (int(event.image.shape[0]), int(event.image.shape[1]))
        self.add(event.index, pose, event.depth, event.intrinsics, size, source)
        if self.keep_frames:
            self.keep_frame(event.index, event.image, event.intrinsics)

    def keep_frame(
        self, index: int, image: npt.NDArray[np.uint8], intrinsics: npt.ArrayLike | None
    ) -> None:
        """Keep one frame for the closed-loop pairs (module docstring)."""
        import cv2

        small, k = shrink_frame(np.asarray(image), intrinsics)
        bgr = cv2.cvtColor(small, cv2.COLOR_RGB2BGR)
        ok, jpeg = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, FRAME_JPEG_QUALITY])
        if ok:
            self.frames[index] = jpeg.tobytes()
        if k is not None:
            self.frame_intrinsics[index] = k

    def pose_track(self, frames: int) -> npt.NDArray[np.float64] | None:
        """(frames, 4, 4) camera-to-world poses, NaN rows where none came; None without any."""
        if not self.poses:
            return None
        poses = np.full((frames, 4, 4), np.nan)
        for i, p in self.poses.items():
            if i < frames:
                poses[i] = p
        return poses

    def add(
        self,
        index: int,
        pose: npt.ArrayLike | None,
        depth: npt.ArrayLike | None,
        intrinsics: npt.ArrayLike | None,
        image_size: tuple[int, int],
        pose_source: str,
    ) -> None:
        if pose is not None:
            self.poses[index] = np.asarray(pose, dtype=np.float64).reshape(4, 4)
            self.pose_source = pose_source
            if self.gate is not None:
                self.gate.update(index, self.poses[index])
        if depth is not None and intrinsics is not None:
            self.depth[index] = coarse_depth(depth, intrinsics, image_size)

    def to_cache(self, frames: int) -> WorldAtlasCache:
        poses = self.pose_track(frames)
        depth = valid = intr = None
        if self.depth:
            shapes = {d.shape for d, _, _ in self.depth.values()}
            h, w = max(shapes)
            depth = np.zeros((frames, h, w), np.float16)
            valid = np.zeros((frames, h, w), bool)
            intr = np.full((frames, 3, 3), np.nan)
            for i, (d, v, k) in self.depth.items():
                if i < frames and d.shape == (h, w):
                    depth[i], valid[i], intr[i] = d, v, k
        return WorldAtlasCache(
            self.pose_source, poses, depth, valid, intr, dict(self.problems), self.closed_loop
        )

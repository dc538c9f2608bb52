"""Return gate, revisit pairs and the outbound/return split (WorldAtlas:
docs/methods.md#memory_return_gate, docs/methods.md#memory_scene_f1).

Pairs are read from the pose track the model actually produced, never from action indices:
a model that under-executes its return is judged on where it went, and one that never comes
back is reported as "no revisit", not as having forgotten the scene.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from streameval.core.arrays import F64
from streameval.metrics.worldatlas.constants import (
    MAX_PAIR_DISTANCE,
    MIN_DEPARTURE_FACTOR,
    MIN_EXCURSION_FACTOR,
    MIN_GAP_SECONDS,
    MIN_SEGMENT_POSE_FRAMES,
    ROTATION_WEIGHT,
)
from streameval.metrics.worldatlas.pose_distance import PoseDistances, as_pose_track, pose_distances

PAIR_COLUMNS = (
    "first_index",
    "revisit_index",
    "pose_distance",
    "translation_distance_normalized",
    "rotation_degrees",
    "gap_seconds",
    "excursion",
)
PairSource = Literal["strict", "nearest_pose_fallback"]
SplitSource = Literal["longest_supported_revisit_episode", "temporal_midpoint_fallback"]


def min_gap_frames(fps: float, min_gap_seconds: float = MIN_GAP_SECONDS) -> int:
    """g = ceil(Delta t_min * fps), at least 1.

    WorldAtlas writes a ceiling; the reference rounds half to even
    (docs/methods.md#other-documented-differences). They differ only at a half-frame product
    (e.g. 12.5 fps), where WorldAtlas's definition wins.
    """
    return max(math.ceil(float(min_gap_seconds) * max(float(fps), 1e-6) - 1e-9), 1)


@dataclass(frozen=True, slots=True)
class ReturnGate:
    """WorldAtlas's return gate on one pose track, with the evidence for its decision
    (docs/methods.md#memory_return_gate)."""

    pairs: F64  # (M, 7) strict revisit pairs, columns PAIR_COLUMNS
    departure_profile: F64  # d(0, t)
    frame_count: int
    fps: float
    min_gap_frames: int
    translation_extent: float
    rotation_extent_degrees: float
    scale_is_degenerate: bool
    departure_distance: float
    required_departure_distance: float
    required_excursion: float

    @property
    def departed(self) -> bool:
        return self.departure_distance >= self.required_departure_distance

    @property
    def returned(self) -> bool:
        return len(self.pairs) > 0

    @property
    def passed(self) -> bool:
        return self.departed and self.returned

    @property
    def turnaround_index(self) -> int:
        """First frame farthest from the anchor: a diagnostic, not the scene split."""
        return int(np.argmax(self.departure_profile))

    @property
    def failure_reason(self) -> str | None:
        if not self.departed:
            return (
                f"camera never departed: max d(0,t) = {self.departure_distance:.4g} < "
                f"{self.required_departure_distance:.4g}"
            )
        if not self.returned:
            return (
                "no revisit: the rollout never came back within the pair threshold of an earlier "
                "viewpoint after an excursion (not scored as forgetting)"
            )
        return None


def _pair_rows(
    d: PoseDistances, fps: float, firsts: list[int], revisits: list[int], excursions: list[float]
) -> F64:
    rows = np.empty((len(firsts), 7), dtype=np.float64)
    for k, (i, j, e) in enumerate(zip(firsts, revisits, excursions, strict=True)):
        rows[k] = (
            i,
            j,
            d.distance[j, i],
            d.translation[j, i],
            d.rotation_degrees[j, i],
            (j - i) / fps,
            e,
        )
    return rows


_GATE_MEMO: OrderedDict[tuple[object, ...], ReturnGate] = OrderedDict()
_GATE_MEMO_SIZE = 4
_GATE_MEMO_LOCK = threading.Lock()


def return_gate(
    poses_c2w: NDArray[np.generic],
    *,
    fps: float,
    max_pair_distance: float = MAX_PAIR_DISTANCE,
    min_gap_seconds: float = MIN_GAP_SECONDS,
    rotation_weight: float = ROTATION_WEIGHT,
    min_departure_factor: float = MIN_DEPARTURE_FACTOR,
    min_excursion_factor: float = MIN_EXCURSION_FACTOR,
) -> ReturnGate:
    """Departure, then strict revisit pairs (docs/methods.md#memory_return_gate).

    For each frame j the nearest frame at least g frames earlier is its candidate; it is
    kept when within tau and when the camera went at least beta*tau away from it in
    between (the excursion test stops slow motion from pairing a frame with its own past).

    One episode asks for its gate up to three times (the closed-loop frames at episode end,
    then the memory_loop and the closed-loop metrics when scoring), 0.1-0.3 s each on a 60 s
    loop, so the last few gates are remembered by the exact bytes of the pose track and the
    parameters: a deterministic function of them, so a remembered gate is the computed one.
    Its arrays are read-only, as a shared answer must be.
    """
    poses = as_pose_track(poses_c2w)
    key = (
        hashlib.blake2b(poses.tobytes(), digest_size=20).digest(),
        poses.shape,
        float(fps),
        float(max_pair_distance),
        float(min_gap_seconds),
        float(rotation_weight),
        float(min_departure_factor),
        float(min_excursion_factor),
    )
    with _GATE_MEMO_LOCK:
        gate = _GATE_MEMO.get(key)
        if gate is not None:
            _GATE_MEMO.move_to_end(key)
            return gate
    gate = _compute_return_gate(
        poses,
        fps=fps,
        max_pair_distance=max_pair_distance,
        min_gap_seconds=min_gap_seconds,
        rotation_weight=rotation_weight,
        min_departure_factor=min_departure_factor,
        min_excursion_factor=min_excursion_factor,
    )
    gate.pairs.flags.writeable = False
    gate.departure_profile.flags.writeable = False
    with _GATE_MEMO_LOCK:
        _GATE_MEMO[key] = gate
        while len(_GATE_MEMO) > _GATE_MEMO_SIZE:
            _GATE_MEMO.popitem(last=False)
    return gate


def _compute_return_gate(
    poses_c2w: NDArray[np.generic],
    *,
    fps: float,
    max_pair_distance: float = MAX_PAIR_DISTANCE,
    min_gap_seconds: float = MIN_GAP_SECONDS,
    rotation_weight: float = ROTATION_WEIGHT,
    min_departure_factor: float = MIN_DEPARTURE_FACTOR,
    min_excursion_factor: float = MIN_EXCURSION_FACTOR,
) -> ReturnGate:
    """:func:`return_gate`, computed."""
    d = pose_distances(poses_c2w, rotation_weight=rotation_weight)
    rate = max(float(fps), 1e-6)
    gap = min_gap_frames(rate, min_gap_seconds)
    n = len(d.distance)
    required_excursion = float(min_excursion_factor) * float(max_pair_distance)
    firsts: list[int] = []
    revisits: list[int] = []
    excursions: list[float] = []
    for j in range(gap, n):
        window = d.distance[j, : j - gap + 1]
        i = int(np.argmin(window))
        if float(window[i]) > max_pair_distance:
            continue
        between = d.distance[i, i + 1 : j]
        excursion = float(np.max(between)) if between.size else 0.0
        if excursion < required_excursion:
            continue
        firsts.append(i)
        revisits.append(j)
        excursions.append(excursion)
    return ReturnGate(
        pairs=_pair_rows(d, rate, firsts, revisits, excursions),
        departure_profile=d.distance[0].copy(),
        frame_count=n,
        fps=rate,
        min_gap_frames=gap,
        translation_extent=d.translation_extent,
        rotation_extent_degrees=d.rotation_extent_degrees,
        scale_is_degenerate=d.degenerate,
        departure_distance=float(np.max(d.distance[0])),
        required_departure_distance=float(min_departure_factor) * float(max_pair_distance),
        required_excursion=required_excursion,
    )


def nearest_pose_pairs(
    poses_c2w: NDArray[np.generic],
    *,
    fps: float,
    min_gap_seconds: float = MIN_GAP_SECONDS,
    rotation_weight: float = ROTATION_WEIGHT,
) -> F64:
    """WorldAtlas's fallback when no strict pair exists: for every frame its nearest earlier
    pose at least g frames before, with neither the return-distance nor the excursion test
    (pair_source = nearest_pose_fallback). These pairs can reflect control error and must be
    read together with the failed gate."""
    d = pose_distances(poses_c2w, rotation_weight=rotation_weight)
    rate = max(float(fps), 1e-6)
    gap = min_gap_frames(rate, min_gap_seconds)
    firsts: list[int] = []
    revisits: list[int] = []
    excursions: list[float] = []
    for j in range(gap, len(d.distance)):
        i = int(np.argmin(d.distance[j, : j - gap + 1]))
        between = d.distance[i, i + 1 : j]
        firsts.append(i)
        revisits.append(j)
        excursions.append(float(np.max(between)) if between.size else 0.0)
    return _pair_rows(d, rate, firsts, revisits, excursions)


def scoring_pairs(gate: ReturnGate, poses_c2w: NDArray[np.generic]) -> tuple[F64, PairSource]:
    """The strict pairs when there are any, else the nearest-pose fallback
    (docs/methods.md#memory_return_gate)."""
    if gate.returned:
        return gate.pairs, "strict"
    return nearest_pose_pairs(poses_c2w, fps=gate.fps), "nearest_pose_fallback"


def select_diverse_pairs(pairs: F64, *, max_pairs: int) -> F64:
    """Thin pairs to at most ``max_pairs`` while keeping the spread of time gaps.

    Gaps are bucketed evenly between the shortest and the longest; each bucket keeps its
    closest pose match (the first one on ties), and the two extreme gaps are kept as they
    are because they anchor the ends of any fit over gap length. The sort by gap is stable,
    so equal gaps keep their order of detection.
    """
    order = np.argsort(pairs[:, 5], kind="stable")
    ordered = pairs[order]
    if max_pairs <= 0 or len(ordered) <= max_pairs:
        return ordered
    shortest, longest = float(ordered[0, 5]), float(ordered[-1, 5])
    span = max(longest - shortest, 1e-8)
    best: dict[int, int] = {}
    for row in range(len(ordered)):
        bucket = min(int((ordered[row, 5] - shortest) / span * max_pairs), max_pairs - 1)
        kept = best.get(bucket)
        if kept is None or ordered[row, 2] < ordered[kept, 2]:
            best[bucket] = row
    best[0] = 0
    best[max_pairs - 1] = len(ordered) - 1
    rows = sorted(best.values(), key=lambda r: (ordered[r, 5], r))
    return ordered[rows]


@dataclass(frozen=True, slots=True)
class MemorySplit:
    """Outbound frames [outbound_start, turnaround) and return frames [turnaround, return_end)."""

    outbound_start: int
    turnaround: int
    return_end: int
    source: SplitSource
    episode: tuple[int, int] | None  # (i*, j*) for an episode split

    @property
    def outbound(self) -> range:
        return range(self.outbound_start, self.turnaround)

    @property
    def revisit(self) -> range:
        return range(self.turnaround, self.return_end)


def episode_split(
    pairs: F64, distance: F64, *, min_frames: int = MIN_SEGMENT_POSE_FRAMES
) -> MemorySplit | None:
    """WorldAtlas's memory_scene_f1 episode: the longest-gap revisit (i*, j*) with >= 2 pose
    frames on each side.

    Ties prefer earlier endpoints. The turnaround is the earliest internal frame farthest
    from i*; frames after j* are excluded. Selection never looks at the scene score.
    """
    candidates = sorted(
        {(int(i), int(j)) for i, j in pairs[:, :2]}, key=lambda ij: (-(ij[1] - ij[0]), ij[0], ij[1])
    )
    for i, j in candidates:
        if j - i < 2:
            continue
        t = i + 1 + int(np.argmax(distance[i, i + 1 : j]))
        if t - i >= min_frames and j + 1 - t >= min_frames:
            return MemorySplit(i, t, j + 1, "longest_supported_revisit_episode", (i, j))
    return None


def midpoint_split(
    frame_count: int, *, min_frames: int = MIN_SEGMENT_POSE_FRAMES
) -> MemorySplit | None:
    """The temporal-halves fallback after a failed gate: [0, N//2) and [N//2, N)."""
    half = frame_count // 2
    if half < min_frames or frame_count - half < min_frames:
        return None
    return MemorySplit(0, half, frame_count, "temporal_midpoint_fallback", None)


def choose_split(
    gate: ReturnGate, poses_c2w: NDArray[np.generic]
) -> tuple[MemorySplit | None, str | None]:
    """The scene-F1 split, or why there is none.

    A supported episode is used whenever there is one; only a failed gate falls back to the
    temporal midpoint. A passed gate without a supported episode stays unavailable.
    """
    distance = pose_distances(poses_c2w).distance
    split = episode_split(gate.pairs, distance) if gate.returned else None
    if split is not None:
        return split, None
    if gate.passed:
        return (
            None,
            "no revisit episode has at least two pose frames on each side of its turnaround",
        )
    fallback = midpoint_split(gate.frame_count)
    if fallback is None:
        return (
            None,
            "temporal-midpoint fallback needs at least two pose frames per half, "
            f"got {gate.frame_count} poses",
        )
    return fallback, None

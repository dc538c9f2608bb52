"""Back-projection, trimmed ICP and the retention/precision F1 of WorldAtlas
(docs/methods.md#memory_scene_f1).

Clouds are float32 (as ViPE depth is); the ICP solves in float64. Nearest neighbours use
scipy's cKDTree, as the reference does, so ties between equidistant points break the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy.spatial import cKDTree

from streameval.core.arrays import F32, F64
from streameval.errors import CloudError, IntrinsicsError
from streameval.metrics.worldatlas.constants import (
    DISTANCE_THRESHOLD_FLOOR,
    DISTANCE_THRESHOLD_RATIO,
    F1_THRESHOLD_FLOOR,
    ICP_MAX_ITERATIONS,
    ICP_MAX_ROTATION_DEGREES,
    ICP_MAX_TRANSLATION_RATIO,
    ICP_TOLERANCE,
    ICP_TRIM_FRACTION,
)

Alignment = Literal["trimmed_icp", "centroid", "identity"]


def frame_intrinsics(
    intrinsics: NDArray[np.generic], frame_index: int
) -> tuple[float, float, float, float]:
    """(fx, fy, cx, cy) of one frame from a (3,3), (K,3,3), (K,>=4) or (>=4,) array.

    A per-frame array shorter than the track repeats its last row (a static camera
    exported once). WorldAtlas keeps signed focal lengths (preserve_signed_nonzero_focal),
    and refuses zero or non-finite ones: they cannot be projected, and no value is repaired.
    """
    values = np.asarray(intrinsics)
    if values.ndim == 3 and values.shape[1:] == (3, 3) and len(values):
        m = values[min(frame_index, len(values) - 1)]
        fx, fy, cx, cy = float(m[0, 0]), float(m[1, 1]), float(m[0, 2]), float(m[1, 2])
    elif values.shape == (3, 3):
        fx, fy, cx, cy = (
            float(values[0, 0]),
            float(values[1, 1]),
            float(values[0, 2]),
            float(values[1, 2]),
        )
    elif values.ndim == 2 and values.shape[1] >= 4 and len(values):
        row = values[min(frame_index, len(values) - 1)]
        fx, fy, cx, cy = float(row[0]), float(row[1]), float(row[2]), float(row[3])
    elif values.ndim == 1 and values.shape[0] >= 4:
        fx, fy, cx, cy = float(values[0]), float(values[1]), float(values[2]), float(values[3])
    else:
        raise IntrinsicsError(f"unsupported intrinsics shape: {values.shape}")
    if not all(math.isfinite(v) for v in (fx, fy, cx, cy)):
        raise IntrinsicsError(
            f"non-finite intrinsics at frame {frame_index}: fx={fx}, fy={fy}, cx={cx}, cy={cy}"
        )
    if fx == 0.0 or fy == 0.0:
        raise IntrinsicsError(f"zero focal length at frame {frame_index}: fx={fx}, fy={fy}")
    return fx, fy, cx, cy


def backproject_frame(
    depth: NDArray[np.generic],
    valid: NDArray[np.generic],
    pose_c2w: NDArray[np.generic],
    intrinsics: NDArray[np.generic],
    *,
    frame_index: int,
    max_points: int,
) -> F32:
    """World points of one frame's valid, finite, positive depth pixels.

    x = (u - cx) z / fx and y = (v - cy) z / fy at pixel centres; more than ``max_points``
    pixels are thinned evenly in raster order. The pose multiplies in its own precision.
    """
    fx, fy, cx, cy = frame_intrinsics(intrinsics, frame_index)
    depth_arr = np.asarray(depth)
    mask = np.asarray(valid, dtype=bool) & np.isfinite(depth_arr) & (depth_arr > 0.0)
    rows, cols = np.nonzero(mask)
    if len(cols) == 0:
        return np.empty((0, 3), dtype=np.float32)
    if len(cols) > max_points:
        keep = np.rint(np.linspace(0, len(cols) - 1, num=max_points)).astype(np.int64)
        rows, cols = rows[keep], cols[keep]
    z = np.asarray(depth_arr[rows, cols], dtype=np.float32)
    x = (cols.astype(np.float32) - cx) * z / fx
    y = (rows.astype(np.float32) - cy) * z / fy
    camera = np.stack([x, y, z], axis=1).astype(np.float32)
    pose = np.asarray(pose_c2w)
    world = (pose[:3, :3] @ camera.T).T + pose[:3, 3]
    return np.asarray(world, dtype=np.float32)


def segment_frame_indices(start: int, end: int, count: int) -> list[int]:
    """Up to ``count`` frames evenly over [start, end), both ends included (round half to even)."""
    if end <= start:
        return []
    n = end - start
    take = min(max(int(count), 1), n)
    return sorted({start + round(float(v)) for v in np.linspace(0, n - 1, num=take)})


def finite_points(points: NDArray[np.generic]) -> F32:
    """The rows of a cloud that are finite, as float32."""
    cloud = np.asarray(points, dtype=np.float32).reshape(-1, 3)
    return cloud[np.isfinite(cloud).all(axis=1)]


def _rigid_fit(source: F64, target: F64) -> tuple[F64, F64]:
    """Least-squares rotation and translation from ``source`` onto ``target`` (Kabsch, no scale)."""
    source_mean = np.mean(source, axis=0)
    target_mean = np.mean(target, axis=0)
    u, _, vt = np.linalg.svd((source - source_mean).T @ (target - target_mean))
    rotation = vt.T @ u.T
    if np.linalg.det(rotation) < 0.0:
        vt[-1] *= -1.0
        rotation = vt.T @ u.T
    return rotation, target_mean - rotation @ source_mean


@dataclass(frozen=True, slots=True)
class IcpResult:
    aligned: F32  # the moved cloud when accepted, else the input unchanged
    accepted: bool
    iterations: int
    trim_fraction: float
    translation: float
    translation_ratio: float
    rotation_degrees: float

    def details(self) -> dict[str, Any]:
        return {
            "alignment": "trimmed_icp" if self.accepted else "trimmed_icp_rejected_identity",
            "alignment_iterations": self.iterations,
            "alignment_trim_fraction": self.trim_fraction,
            "alignment_translation": self.translation,
            "alignment_translation_ratio": self.translation_ratio,
            "alignment_rotation_degrees": self.rotation_degrees,
            "alignment_accepted": self.accepted,
        }


def trimmed_icp(
    source: NDArray[np.generic],
    target: NDArray[np.generic],
    *,
    trim_fraction: float = ICP_TRIM_FRACTION,
    max_iterations: int = ICP_MAX_ITERATIONS,
    tolerance: float = ICP_TOLERANCE,
    max_translation_ratio: float = ICP_MAX_TRANSLATION_RATIO,
    max_rotation_degrees: float = ICP_MAX_ROTATION_DEGREES,
) -> IcpResult:
    """Point-to-point ICP on the best ``trim_fraction`` of matches, bounded
    (docs/methods.md#memory_scene_f1).

    Pose drift shifts a whole return cloud and would read as forgetting everywhere, so a small
    rigid correction is allowed; a large one would let ICP slide a different room onto the
    remembered one, so motions beyond 0.10 x the fixed cloud's diagonal or 10 degrees are
    rejected and the identity kept.
    """
    moving = finite_points(source).astype(np.float64)
    fixed32 = finite_points(target)
    fixed = fixed32.astype(np.float64)
    if len(moving) < 3 or len(fixed) < 3:
        raise CloudError("trimmed ICP requires at least three points per cloud")
    original = moving.copy()
    tree = cKDTree(fixed32)
    total_rotation = np.eye(3)
    total_translation = np.zeros(3)
    keep_fraction = min(max(float(trim_fraction), 0.1), 1.0)
    previous = math.inf
    iterations = 0
    for step in range(max(int(max_iterations), 1)):
        # Queries run on the float32 image of the moving cloud, as the clouds are stored.
        dist, index = tree.query(moving.astype(np.float32), k=1, workers=-1)
        dist = dist.astype(np.float64)
        keep_count = max(3, math.ceil(len(dist) * keep_fraction))
        keep = np.argpartition(dist, keep_count - 1)[:keep_count]
        rotation, translation = _rigid_fit(moving[keep], fixed[index[keep]])
        moving = (rotation @ moving.T).T + translation
        total_translation = rotation @ total_translation + translation
        total_rotation = rotation @ total_rotation
        error = float(np.mean(dist[keep]))
        iterations = step + 1
        if abs(previous - error) <= tolerance:
            break
        previous = error
    diagonal = float(np.linalg.norm(np.ptp(fixed, axis=0)))
    shift = float(np.linalg.norm(total_translation))
    angle = math.degrees(
        math.acos(float(np.clip((np.trace(total_rotation) - 1.0) * 0.5, -1.0, 1.0)))
    )
    accepted = (
        shift <= max(diagonal * max_translation_ratio, 1e-8) and angle <= max_rotation_degrees
    )
    return IcpResult(
        aligned=(moving if accepted else original).astype(np.float32),
        accepted=bool(accepted),
        iterations=iterations,
        trim_fraction=keep_fraction,
        translation=shift,
        translation_ratio=shift / max(diagonal, 1e-8),
        rotation_degrees=angle,
    )


def nearest_distances(query: NDArray[np.generic], target: NDArray[np.generic]) -> F32:
    """Distance from every finite query point to its nearest finite target point (float32)."""
    q, t = finite_points(query), finite_points(target)
    if len(q) == 0 or len(t) == 0:
        return np.full(len(q), np.inf, dtype=np.float32)
    distances = cKDTree(t).query(q, k=1, workers=-1)[0]
    return np.asarray(distances, dtype=np.float32)


@dataclass(frozen=True, slots=True)
class SceneOverlap:
    """R_mem, P_mem and F1 of docs/methods.md#memory_scene_f1."""

    f1: float
    retention: float  # R_mem: outbound points supported by the return cloud
    hallucination: float  # R_hall: return points without outbound support
    precision: float  # P_mem = 1 - R_hall
    distance_threshold: float

    def to_json(self) -> dict[str, float]:
        return {
            "scene_memory_f1": self.f1,
            "retention": self.retention,
            "hallucination": self.hallucination,
            "precision": self.precision,
            "distance_threshold": self.distance_threshold,
        }


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0)


def overlap_f1(
    observation: NDArray[np.generic], revisit: NDArray[np.generic], *, distance_threshold: float
) -> SceneOverlap:
    """Retention, hallucination and their F1 at ``distance_threshold``."""
    obs, rev = finite_points(observation), finite_points(revisit)
    if len(obs) == 0 or len(rev) == 0:
        raise CloudError("scene F1 needs non-empty outbound and return point clouds")
    threshold = max(float(distance_threshold), F1_THRESHOLD_FLOOR)
    retention = float(np.mean(nearest_distances(obs, rev) < threshold))
    hallucination = float(np.mean(nearest_distances(rev, obs) >= threshold))
    precision = 1.0 - hallucination
    total = precision + retention
    f1 = 0.0 if total <= 1e-8 else 2.0 * precision * retention / total
    return SceneOverlap(
        _unit(f1), _unit(retention), _unit(hallucination), _unit(precision), threshold
    )


@dataclass(frozen=True, slots=True)
class CloudScore:
    overlap: SceneOverlap
    observation_points: int
    revisit_points: int
    scene_diagonal: float
    alignment: dict[str, Any]


def score_clouds(
    observation: NDArray[np.generic],
    revisit: NDArray[np.generic],
    *,
    alignment: Alignment = "trimmed_icp",
    distance_threshold: float | None = None,
    distance_threshold_ratio: float = DISTANCE_THRESHOLD_RATIO,
) -> CloudScore:
    """Align the return cloud to the outbound one, then score their overlap.

    tau_d = 0.02 x the diagonal of both clouds after alignment, unless given.
    """
    obs, rev = finite_points(observation), finite_points(revisit)
    details: dict[str, Any]
    if alignment == "trimmed_icp" and len(obs) and len(rev):
        icp = trimmed_icp(rev, obs)
        rev, details = icp.aligned, icp.details()
    elif alignment == "centroid" and len(obs) and len(rev):
        rev = rev + (np.mean(obs, axis=0) - np.mean(rev, axis=0))
        details = {"alignment": "centroid_translation"}
    else:
        details = {"alignment": "identity"}
    both = np.concatenate([obs, rev], axis=0)
    diagonal = (
        float(np.linalg.norm(np.max(both, axis=0) - np.min(both, axis=0))) if len(both) else 0.0
    )
    threshold = (
        max(diagonal * distance_threshold_ratio, DISTANCE_THRESHOLD_FLOOR)
        if distance_threshold is None
        else float(distance_threshold)
    )
    overlap = overlap_f1(obs, rev, distance_threshold=threshold)
    return CloudScore(overlap, len(obs), len(rev), diagonal, details)

"""memory_scene_f1 of one episode (docs/methods.md#memory_scene_f1): outbound vs return clouds from
depth and poses.

The split comes from ``revisit.choose_split``; this module samples up to 8 frames per side,
back-projects up to 4096 points per frame, aligns the return cloud with trimmed ICP and scores
the overlap. It is not conditioned on common visibility: newly visible surfaces lower F1 too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from streameval.core.arrays import F32
from streameval.errors import DepthInputError
from streameval.metrics.worldatlas.constants import MAX_FRAMES_PER_SEGMENT, MAX_POINTS_PER_FRAME
from streameval.metrics.worldatlas.point_cloud import (
    Alignment,
    CloudScore,
    backproject_frame,
    score_clouds,
    segment_frame_indices,
)


@dataclass(frozen=True, slots=True)
class DepthSidecar:
    """ViPE-layout depth: z-depth per frame, a validity mask, intrinsics (any supported layout)."""

    depth: NDArray[np.floating]  # (T, H, W)
    valid: NDArray[np.bool_]  # (T, H, W)
    intrinsics: NDArray[np.floating]

    def check(self, pose_count: int) -> None:
        """Refuse shapes that cannot belong to a (pose_count)-frame track, naming the input."""
        if self.depth.ndim != 3:
            raise DepthInputError(f"depth_metric must be (T, H, W), got {self.depth.shape}")
        if self.valid.shape != self.depth.shape:
            raise DepthInputError(
                f"depth_valid_mask shape {self.valid.shape} != depth_metric {self.depth.shape}"
            )
        if len(self.depth) < 2 or pose_count < 2:
            raise DepthInputError(
                f"too few frames: {len(self.depth)} depth, {pose_count} poses (need 2)"
            )


def segment_cloud(
    frames: Sequence[int],
    poses_c2w: NDArray[np.floating],
    sidecar: DepthSidecar,
    *,
    max_points_per_frame: int = MAX_POINTS_PER_FRAME,
) -> F32:
    """World points of the sampled frames that have depth (IntrinsicsError propagates)."""
    clouds = [
        backproject_frame(
            np.asarray(sidecar.depth[i]),
            np.asarray(sidecar.valid[i]),
            poses_c2w[i],
            sidecar.intrinsics,
            frame_index=i,
            max_points=max_points_per_frame,
        )
        for i in frames
        if i < len(sidecar.depth)
    ]
    if not clouds:
        return np.empty((0, 3), dtype=np.float32)
    return np.concatenate(clouds, axis=0)


@dataclass(frozen=True, slots=True)
class SceneF1:
    score: CloudScore
    outbound_frames: list[int]
    return_frames: list[int]


def scene_f1_on_split(
    poses_c2w: NDArray[np.generic],
    sidecar: DepthSidecar,
    outbound: range,
    revisit: range,
    *,
    alignment: Alignment = "trimmed_icp",
    max_frames_per_segment: int = MAX_FRAMES_PER_SEGMENT,
    max_points_per_frame: int = MAX_POINTS_PER_FRAME,
) -> SceneF1:
    """Score one given outbound/return split (raises CloudError when a side has no point)."""
    poses = np.asarray(poses_c2w, dtype=np.float64)
    frames = min(len(poses), len(sidecar.depth), len(sidecar.valid))
    out_frames = segment_frame_indices(
        outbound.start, min(outbound.stop, frames), max_frames_per_segment
    )
    ret_frames = segment_frame_indices(
        revisit.start, min(revisit.stop, frames), max_frames_per_segment
    )
    obs = segment_cloud(out_frames, poses, sidecar, max_points_per_frame=max_points_per_frame)
    rev = segment_cloud(ret_frames, poses, sidecar, max_points_per_frame=max_points_per_frame)
    return SceneF1(score_clouds(obs, rev, alignment=alignment), out_frames, ret_frames)

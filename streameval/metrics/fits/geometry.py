"""Scoring-time geometry for Global Memory (docs/methods.md#global_memory): which frames are views,
and views from the pose + depth a model (or a sidecar) sent.

Pure numpy, no OpenCV: the pipeline plans the frames perception keeps with ``select_views``,
the cache stores ``FrameGeometry`` records (``core/episode/geometry.py``), and scoring turns
them into the kernel's ``GlobalView`` inputs with ``views_from_frames``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from streameval.constants import GLOBAL_MAX_VIEWS, GLOBAL_MIN_VIEWS, GLOBAL_VIEW_EVERY_S
from streameval.core.arrays import F64
from streameval.core.episode.geometry import FrameGeometry
from streameval.metrics.memory.global_memory import GlobalView
from streameval.metrics.segments import check_fps

# floor(x + eps) so that a whole number of seconds computed in floating point stays whole.
_SNAP = 1e-9


def select_views(n_frames: int, fps: float) -> list[int]:
    """Frames of the reconstruction pass, as the reference selects them (module docstring)."""
    if isinstance(n_frames, bool) or int(n_frames) != n_frames or n_frames < 1:
        raise ValueError(f"n_frames must be a positive integer, got {n_frames!r}")
    n = int(n_frames)
    step = max(1, round(GLOBAL_VIEW_EVERY_S * check_fps(fps)))
    frames = list(range(0, n, step))
    if len(frames) < GLOBAL_MIN_VIEWS:
        frames = sorted({int(x) for x in np.linspace(0, n - 1, GLOBAL_MIN_VIEWS)})
    if len(frames) > GLOBAL_MAX_VIEWS:
        pos = np.linspace(0, len(frames) - 1, GLOBAL_MAX_VIEWS)
        frames = [frames[int(p)] for p in pos]
    return frames


def intrinsics_for_depth(
    intrinsics: ArrayLike, image_size: tuple[int, int], depth_size: tuple[int, int]
) -> F64:
    """The image's pinhole intrinsics rescaled to a depth map of ``depth_size = (h, w)``.

    Depth pixel (i, j) lies on image point ``((j + 0.5)·W/w − 0.5, (i + 0.5)·H/h − 0.5)`` (the
    cv2.resize convention, which the procedural world uses), so image x maps to depth
    ``j = (x + 0.5)·w/W − 0.5``: ``fx' = fx·w/W``, ``skew' = skew·w/W``,
    ``cx' = (cx + 0.5)·w/W − 0.5``, and the same in y with h/H.
    """
    k = np.array(intrinsics, dtype=np.float64)
    if k.shape != (3, 3):
        raise ValueError(f"intrinsics must be 3×3, got shape {k.shape}")
    big_h, big_w = (int(v) for v in image_size)
    h, w = (int(v) for v in depth_size)
    if min(big_h, big_w, h, w) < 1:
        raise ValueError(f"sizes must be positive, got image {image_size}, depth {depth_size}")
    sx, sy = w / big_w, h / big_h
    out = k.copy()
    out[0, 0] = k[0, 0] * sx
    out[0, 1] = k[0, 1] * sx
    out[0, 2] = (k[0, 2] + 0.5) * sx - 0.5
    out[1, 1] = k[1, 1] * sy
    out[1, 2] = (k[1, 2] + 0.5) * sy - 0.5
    return out


def views_from_frames(
    frames: Sequence[FrameGeometry | tuple[int, ArrayLike, ArrayLike, ArrayLike, tuple[int, int]]],
) -> list[GlobalView]:
    """GlobalViews from pose + depth sent by the model or read from a sidecar.

    Each item is ``(frame, pose, depth, intrinsics_of_image, (height, width)_of_image)``. The
    intrinsics are rescaled to the depth map (:func:`intrinsics_for_depth`); the confidence
    mask is "finite and > 0", so sky (+inf) and unknown (NaN) pixels are simply not used,
    rather than making the view bad.
    """
    views: list[GlobalView] = []
    for item in frames:
        geo = FrameGeometry(*item)
        depth = np.asarray(geo.depth, dtype=np.float64)
        if depth.ndim != 2:
            raise ValueError(f"frame {geo.frame}: depth must be (h, w), got shape {depth.shape}")
        pose = np.asarray(geo.pose, dtype=np.float64)
        if pose.shape != (4, 4):
            raise ValueError(f"frame {geo.frame}: pose must be 4×4, got shape {pose.shape}")
        k = intrinsics_for_depth(geo.intrinsics, geo.image_size, depth.shape)
        confident = np.isfinite(depth) & (depth > 0)
        views.append(GlobalView(int(geo.frame), pose, depth, k, confident))
    return views

"""Reconstruction for Global Memory (SPEC §5): per view, a camera-to-world pose, a z-depth map
and intrinsics for that depth map (``GlobalView``).

Two ways to get views:

- :func:`views_from_frames` — pose + depth sent by the model with each frame, or read from a
  sidecar. No network, so the numbers only depend on what the model said about itself.
- A :class:`ReconstructionBackend` that reconstructs from the images alone. The seed uses
  VGGT(-Omega); transformers has no VGGT class and the ``vggt`` package is not on the package
  index (``pip download vggt`` finds no distribution), so the ``vggt`` entry raises
  BackendUnavailableError naming the missing package rather than substituting something
  else. There is deliberately no CPU default: a made-up reconstruction would give a made-up
  number (the metric says not_applicable instead).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from streameval.errors import BackendUnavailableError
from streameval.metrics.memory_global import GlobalView
from streameval.registry import Registry

FloatArray = npt.NDArray[np.float64]


class ReconstructionBackend(Protocol):
    """Joint reconstruction of a few frames (RGB uint8 H×W×3, about 1 s apart) -> one
    GlobalView per image, in the same order, in one shared world frame."""

    name: str

    def reconstruct(self, images: Sequence[npt.NDArray[np.uint8]]) -> list[GlobalView]: ...


class FrameGeometry(NamedTuple):
    """What a model (or a sidecar) says about one frame.

    ``pose`` camera-to-world 4×4 (OpenCV axes); ``depth`` z-depth (h, w), +inf/NaN where
    unknown or infinitely far; ``intrinsics`` pinhole 3×3 of the *image*; ``image_size`` the
    image's ``(height, width)`` in pixels (numpy order).
    """

    frame: int
    pose: ArrayLike
    depth: ArrayLike
    intrinsics: ArrayLike
    image_size: tuple[int, int]


def intrinsics_for_depth(
    intrinsics: ArrayLike, image_size: tuple[int, int], depth_size: tuple[int, int]
) -> FloatArray:
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


VGGT_PACKAGE = "vggt"


class VggtReconstruction:
    """VGGT (seed 000's Global Memory reconstruction) — not available in this environment.

    transformers ships no VGGT class and the ``vggt`` package (facebookresearch/vggt) is not on
    the package index, so there is nothing to install from here. If a ``vggt`` package is
    importable this still refuses: its API and weights have not been tested with this
    evaluator, and an unverified reconstruction would put an unverified number in the
    Global Memory column.
    """

    name = "vggt"

    def __init__(self, **_options: Any) -> None:
        if importlib.util.find_spec(VGGT_PACKAGE) is None:
            raise BackendUnavailableError(
                "vggt reconstruction backend needs the Python package 'vggt' "
                "(facebookresearch/vggt, with its VGGT-1B weights), which is not installed and "
                "not on the package index; transformers has no VGGT class. Without it, Global "
                "Memory needs pose + depth from the model or a sidecar (views_from_frames)"
            )
        raise BackendUnavailableError(
            "vggt reconstruction backend: the 'vggt' package is installed, but streameval has "
            "no tested adapter for it yet; use pose + depth from the model or a sidecar"
        )

    def reconstruct(self, images: Sequence[npt.NDArray[np.uint8]]) -> list[GlobalView]:
        raise BackendUnavailableError("vggt reconstruction backend is not available")


RECONSTRUCTION_BACKENDS = Registry("reconstruction")
RECONSTRUCTION_BACKENDS.register("vggt", "streameval.perception.reconstruction:VggtReconstruction")


def create_reconstruction_backend(name: str, **kwargs: Any) -> ReconstructionBackend:
    """Build the reconstruction backend registered as ``name``."""
    backend: ReconstructionBackend = RECONSTRUCTION_BACKENDS.create(name, **kwargs)
    return backend

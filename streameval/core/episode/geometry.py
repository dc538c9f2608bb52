"""One frame's geometry as a model (or a sidecar) sends it: pose, depth and intrinsics, kept in
the episode cache for Global Memory (docs/methods.md#global_memory)."""

from __future__ import annotations

from typing import NamedTuple

from numpy.typing import ArrayLike


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

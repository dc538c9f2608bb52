"""The camera the geometry assumes: the focal length, in analysis pixels, of the motion-type
fit, the derotation and the degree ↔ flow conversion (docs/methods.md#known-intrinsics).

WorldMark assumes a 70° horizontal field of view for every video. A model that sends its
intrinsics with each frame (``FrameEvent.intrinsics``, a 3×3 K in the frame's pixels), or a
case that ships them (WorldMark's ``*_intrinsics.npy``, ``[fx, fy, cx, cy]`` in the case
image's pixels), states its camera; then that camera is used — the model's over the case's,
since the frames are what the model rendered. Without either, nothing changes: 70°, so
published videos score as the reference scores them. Which was assumed, and from where, is
recorded in the cache's meta (``camera``) and in the scores that use it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from streameval.constants import FOV_DEG

CameraSource = Literal["model", "case", "default"]
SOURCES: tuple[CameraSource, ...] = ("model", "case", "default")


@dataclass(frozen=True, slots=True)
class Camera:
    """``fov_deg``: the horizontal field of view; ``source``: where it came from."""

    fov_deg: float
    source: CameraSource

    def focal(self, width: int) -> float:
        """The focal length in pixels of a frame ``width`` wide."""
        return (width / 2.0) / math.tan(math.radians(self.fov_deg) / 2.0)

    def px_per_degree(self, width: int) -> float:
        """Horizontal flow pixels per degree of yaw on a frame ``width`` wide (the linear
        conversion WorldMark uses, ``width / fov``)."""
        return width / self.fov_deg

    def to_json(self) -> dict[str, Any]:
        return {"fov_deg": round(self.fov_deg, 6), "source": self.source}


DEFAULT_CAMERA = Camera(FOV_DEG, "default")


def camera_from_intrinsics(
    intrinsics: Any, image_width: int, source: CameraSource
) -> Camera | None:
    """The camera of ``intrinsics`` (a 3×3 K, or ``[fx, fy, cx, cy]``) for an image
    ``image_width`` wide; None when they do not give a usable horizontal focal length."""
    try:
        values = np.asarray(intrinsics, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if values.shape == (3, 3):
        fx = float(values[0, 0])
    elif values.shape == (4,):
        fx = float(values[0])
    else:
        return None
    if not (math.isfinite(fx) and fx > 0 and image_width > 0):
        return None
    fov = math.degrees(2.0 * math.atan((image_width / 2.0) / fx))
    return Camera(fov, source) if 1.0 <= fov <= 179.0 else None


def camera_of(meta: Mapping[str, Any]) -> Camera:
    """The camera an episode's cache records (``meta["camera"]``), else WorldMark's 70°."""
    block = meta.get("camera")
    if isinstance(block, Mapping):
        fov, source = block.get("fov_deg"), block.get("source")
        if isinstance(fov, int | float) and 1.0 <= float(fov) <= 179.0 and source in SOURCES:
            return Camera(float(fov), source)
    return DEFAULT_CAMERA


def camera_after_frame(current: Camera, intrinsics: Any, image_width: int) -> Camera:
    """The camera once a frame with ``intrinsics`` (or None) arrived: the model's own from its
    first frame that states them (over the case's and the default), then unchanged — one
    camera for the episode, so live, replay and rescore agree."""
    if current.source == "model" or intrinsics is None:
        return current
    return camera_from_intrinsics(intrinsics, image_width, "model") or current


def case_camera(case: Any) -> Camera:
    """The camera a case record states (``intrinsics`` ``[fx, fy, cx, cy]`` in its image's
    pixels, ``image_size`` ``[width, height]``), else WorldMark's 70°."""
    if not isinstance(case, Mapping):
        return DEFAULT_CAMERA
    intrinsics = case.get("intrinsics")
    if not isinstance(intrinsics, list | tuple) or len(intrinsics) != 4:
        return DEFAULT_CAMERA
    size = case.get("image_size")
    width = size[0] if isinstance(size, list | tuple) and size else None
    if not isinstance(width, int | float):
        cx = intrinsics[2]  # no size recorded: the principal point sits at the centre
        width = 2.0 * float(cx) + 1.0 if isinstance(cx, int | float) and cx > 0 else 0
    return camera_from_intrinsics(intrinsics, round(width), "case") or DEFAULT_CAMERA

"""A case image as a picture standing in the world: how the procedural world "starts from"
a benchmark case's image.

Every benchmark case starts a world model from an image. The procedural world cannot
generate a town from a photograph, so it does the next best thing that keeps its ground truth
exact: it stands the image up as a flat, two-sided picture across the start view, at the
distance where the picture fills the first frame exactly (its centre crop to the frame's
aspect, as ``cv2.resize`` would map it) and its bottom edge stands on the ground. The first
frame is then the case image; the keys move the camera over it and past it into the town, with
the picture's depth in the depth map, so every metric still has its truth.

World frame as in ``camera``: the start camera looks along +z from (0, −camera_height, 0); the
picture is the plane z = D, spanning the whole (pre-scaled) image around the optical axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
from streameval.worlds.procedural_world.camera import CameraState, RayGrid

from streameval.core.arrays import F32, F64, Image, Mask


@dataclass(frozen=True, slots=True)
class Picture:
    """The case image, scaled so that one picture texel is one frame pixel at the start, and
    where it stands (``distance`` metres ahead of the start position)."""

    texture: Image  # RGB, pre-scaled: the start frame samples it 1:1
    distance: float
    texels_per_m: float

    @classmethod
    def standing(
        cls, image: Image, width: int, height: int, k: F64, camera_height: float
    ) -> Picture:
        """The picture for a ``width``×``height`` camera with intrinsics ``k``: scaled by the
        ratio of the frame to the image's centre crop of the same aspect, placed where the
        frame's bottom row meets the ground (so the first frame is the image and nothing of
        the ground in front of it)."""
        rgb = np.ascontiguousarray(image[..., :3], dtype=np.uint8)
        ih, iw = rgb.shape[:2]
        crop_w = min(iw, ih * width / height)
        scale = width / crop_w
        size = (max(1, round(iw * scale)), max(1, round(ih * scale)))
        texture = np.asarray(cv2.resize(rgb, size, interpolation=cv2.INTER_AREA), dtype=np.uint8)
        fy, cy = float(k[1, 1]), float(k[1, 2])
        bottom_dy = (height - 1 - cy) / fy
        distance = camera_height / bottom_dy if bottom_dy > 0 else 2.0
        return cls(texture, distance, float(k[0, 0]) / distance)

    def _hits(self, state: CameraState, rays: RayGrid) -> tuple[F64, F32, F32]:
        """Per column: the ray parameter (= z-depth) of the picture plane, inf where the ray
        misses it; the texture maps (x per column, y per pixel)."""
        c, s = math.cos(state.heading), math.sin(state.heading)
        dir_x = rays.dx * c + s
        dir_z = -rays.dx * s + c
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (self.distance - state.z) / dir_z
        t = np.where(np.isfinite(t) & (t > 1e-6), t, np.inf)
        th, tw = self.texture.shape[:2]
        finite_t = np.where(np.isfinite(t), t, 0.0)
        map_x = (state.x + finite_t * dir_x) * self.texels_per_m + (tw / 2.0 - 0.5)
        map_y = (finite_t[None, :] * rays.dy[:, None]) * self.texels_per_m + (th / 2.0 - 0.5)
        map_x = np.where(np.isfinite(t), map_x, -1e6)
        return t, map_x.astype(np.float32), map_y.astype(np.float32)

    def _mask(self, t: F64, map_x: F32, map_y: F32) -> Mask:
        th, tw = self.texture.shape[:2]
        inside_x = (map_x >= -0.5) & (map_x <= tw - 0.5)
        inside_y = (map_y >= -0.5) & (map_y <= th - 0.5)
        mask: Mask = np.isfinite(t)[None, :] & inside_x[None, :] & inside_y
        return mask

    def over_image(self, state: CameraState, rays: RayGrid, image: Image, depth: F32) -> Image:
        """``image`` with the picture drawn where it is the nearest surface (``depth``: the
        scene's z-depth on the same pixels)."""
        t, map_x, map_y = self._hits(state, rays)
        mask = self._mask(t, map_x, map_y) & (t[None, :] < depth)
        if not mask.any():
            return image
        rows = np.flatnonzero(mask.any(axis=1))
        cols = np.flatnonzero(mask.any(axis=0))
        r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
        box = mask[r0:r1, c0:c1]
        # only the picture's bounding box is sampled (it is often a small part of the view)
        box_x = np.ascontiguousarray(np.broadcast_to(map_x[None, c0:c1], box.shape))
        drawn = cv2.remap(
            self.texture,
            box_x,
            np.ascontiguousarray(map_y[r0:r1, c0:c1]),
            cv2.INTER_LINEAR,
            borderMode=cv2.BORDER_REPLICATE,
        )
        out = image.copy()
        region = out[r0:r1, c0:c1]
        np.copyto(region, drawn, where=box[..., None])
        return out

    def over_depth(self, state: CameraState, rays: RayGrid, depth: F32) -> F32:
        """``depth`` with the picture's z-depth where it is the nearest surface."""
        t, map_x, map_y = self._hits(state, rays)
        mask = self._mask(t, map_x, map_y) & (t[None, :] < depth)
        if not mask.any():
            return depth
        picture_depth = np.broadcast_to(t[None, :].astype(np.float32), depth.shape)
        return np.where(mask, picture_depth, depth).astype(np.float32)

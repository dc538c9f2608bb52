"""The camera: pose convention, intrinsics, pixel rays and how keys move it.

World frame: x east, y **down**, z north, origin on the ground under the start position,
matching the OpenCV camera axes (x right, y down, z forward) of the start pose. The camera
only yaws about the vertical axis and translates horizontally, at a constant height above the
ground plane y = 0 (so its y coordinate is ``-camera_height``).

Heading θ = 0 looks along +z; θ grows when the camera turns **right** (toward +x). Then the
camera's right axis is (cos θ, 0, −sin θ), down is (0, 1, 0) and forward is (sin θ, 0, cos θ),
the columns of the camera-to-world rotation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from streameval.core.arrays import F64

# (forward, right, yaw) in units of forward_speed, strafe_speed, yaw_rate. Signs
# (docs/methods.md#keys): A moves the camera left so content flows right (+Sx); L turns left (θ
# decreases) so content also flows right; W moves forward so content expands (+Srad).
KEY_MOTION: dict[str, tuple[float, float, float]] = {
    "W": (1.0, 0.0, 0.0),
    "S": (-1.0, 0.0, 0.0),
    "A": (0.0, -1.0, 0.0),
    "D": (0.0, 1.0, 0.0),
    "L": (0.0, 0.0, -1.0),
    "R": (0.0, 0.0, 1.0),
    "-": (0.0, 0.0, 0.0),
}


@dataclass(frozen=True, slots=True)
class CameraState:
    """Where the camera is: ground-plane position (x, z) in metres and heading in radians."""

    x: float = 0.0
    z: float = 0.0
    heading: float = 0.0

    @property
    def forward(self) -> tuple[float, float]:
        """Unit forward direction on the ground plane, as (x, z)."""
        return math.sin(self.heading), math.cos(self.heading)

    @property
    def right(self) -> tuple[float, float]:
        """Unit right direction on the ground plane, as (x, z)."""
        return math.cos(self.heading), -math.sin(self.heading)


def advance(
    state: CameraState, forward_mps: float, right_mps: float, yaw_rps: float, dt: float
) -> CameraState:
    """Move for ``dt`` seconds with body-frame velocities, translating along the mid-step
    heading so that combined translation and yaw (axis leakage) stay second-order accurate;
    pure translation or pure yaw are exact."""
    mid = state.heading + 0.5 * yaw_rps * dt
    fx, fz = math.sin(mid), math.cos(mid)
    rx, rz = math.cos(mid), -math.sin(mid)
    return CameraState(
        x=state.x + (forward_mps * fx + right_mps * rx) * dt,
        z=state.z + (forward_mps * fz + right_mps * rz) * dt,
        heading=state.heading + yaw_rps * dt,
    )


def pose_matrix(state: CameraState, camera_height: float) -> F64:
    """4×4 camera-to-world matrix (OpenCV camera axes) of ``state``."""
    c, s = math.cos(state.heading), math.sin(state.heading)
    pose = np.eye(4, dtype=np.float64)
    pose[:3, :3] = [[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]]
    pose[:3, 3] = [state.x, -camera_height, state.z]
    return pose


def focal_length(width: int, fov_deg: float) -> float:
    """fx = fy of a pinhole with horizontal field of view ``fov_deg`` over ``width`` pixels."""
    return (width / 2.0) / math.tan(math.radians(fov_deg) / 2.0)


def intrinsics(width: int, height: int, fov_deg: float) -> F64:
    """3×3 camera matrix; pixel centres at integer coordinates, so cx = (W − 1) / 2."""
    f = focal_length(width, fov_deg)
    return np.array(
        [[f, 0.0, (width - 1) / 2.0], [0.0, f, (height - 1) / 2.0], [0.0, 0.0, 1.0]],
        dtype=np.float64,
    )


@dataclass(frozen=True, slots=True)
class RayGrid:
    """Ray slopes of a pixel grid: pixel (r, c) looks along camera direction (dx[c], dy[r], 1).

    Rays are not normalised: with a unit z component, the ray parameter of a hit *is* its
    z-depth, which is what the depth map reports.
    """

    dx: F64  # (columns,)
    dy: F64  # (rows,)


def image_rays(k: F64, width: int, height: int) -> RayGrid:
    """Rays through the pixel centres of the image."""
    fx, fy, cx, cy = k[0, 0], k[1, 1], k[0, 2], k[1, 2]
    return RayGrid(
        dx=(np.arange(width, dtype=np.float64) - cx) / fx,
        dy=(np.arange(height, dtype=np.float64) - cy) / fy,
    )


def resized_rays(k: F64, width: int, height: int, out_w: int, out_h: int) -> RayGrid:
    """Rays through the pixel centres of the image resized to (out_w, out_h).

    Uses the ``cv2.resize`` convention (pixel j of the small grid sits at image coordinate
    (j + 0.5) · W / w − 0.5), so a depth map built on these rays lines up with the image when
    it is resized back.
    """
    fx, fy, cx, cy = k[0, 0], k[1, 1], k[0, 2], k[1, 2]
    u = (np.arange(out_w, dtype=np.float64) + 0.5) * (width / out_w) - 0.5
    v = (np.arange(out_h, dtype=np.float64) + 0.5) * (height / out_h) - 0.5
    return RayGrid(dx=(u - cx) / fx, dy=(v - cy) / fy)

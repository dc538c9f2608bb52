"""A camera-pose estimator of our own, on the CPU, from frames alone (WorldAtlas pose source).

Most model servers send no pose. This estimator tracks Shi–Tomasi corners with pyramidal
Lucas–Kanade from a keyframe to the current frame and chains keyframe-relative poses:

- rotation: a homography H between keyframe and frame is tested for the pure-rotation form
  K^-1 H K ~ R (orthogonal up to scale); when it holds, the motion is a rotation and the
  translation step is exactly zero, so in-place yaw loops keep E degenerate and the gate uses
  the rotation-only distance, as on true poses;
- otherwise the essential matrix (RANSAC) and ``recoverPose`` give R and the translation
  *axis*; its sign is the one the de-rotated flow agrees with (a short baseline's cheirality
  vote flips), and the camera moves a constant ``STEP_PER_FRAME`` along it on every frame the
  flow of the near corners says it moved (+1 forward, -1 back, 0 when it only turned).

Limits, stated: translation has no metric scale (nATEt's 0.06 units/s activity threshold does
not apply, the results say so), and the step length is an assumption, not a measurement: every
translating frame moves the same distance, because the keys command a constant speed. A model
that slows down or speeds up under a held key comes out at constant speed (a stall, where the
image stops, stops the track within ``SENSE_FRAMES`` frames). Measuring the length from parallax
instead made it follow the scene's depth: the four legs of square_loop saw four streets, came
out at four scales and the loop did not close. Intrinsics are assumed from a 70 degree
horizontal field of view unless given; independent moving objects, hard cuts and textureless
frames break the tracking (a lost track restarts a keyframe and carries the last pose on). Pitch
and roll are estimated but the memory_loop suite only exercises yaw and forward motion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import cv2
import numpy as np
import numpy.typing as npt

from streameval.constants import FOV_DEG
from streameval.core.arrays import F64

ESTIMATOR_WIDTH = 320  # frames are resized to this width before tracking
MAX_CORNERS = 300
MIN_TRACKED = 40
NEW_KEYFRAME_PX = 24.0  # median displacement from the keyframe that starts a new one
PARALLAX_PX = 1.0  # a point this far from where the rotation puts it shows parallax
PARALLAX_SHARE = 0.1  # fewer points with parallax than this: the motion is a pure rotation
ORTHOGONALITY_TOL = 0.02
HOMOGRAPHY_RANSAC_PX = 0.3
STEP_PER_FRAME = 0.05  # scale-free translation: every frame that moves the camera moves this far
HEADING_PARALLAX_PX = 1.0  # near corners' de-rotated parallax that makes a direction trusted
HEADING_TOLERANCE_DEG = 20.0
NEAR_PERCENT = 25  # share of corners, those with the most parallax, that read the motion
SENSE_FRAMES = 6  # frames over which the flow's trend says forward, back or still
STILL_PX_PER_FRAME = 0.02  # a trend under this (per frame) is no translation: a turn, noise


def default_intrinsics(width: int, height: int, fov_deg: float = FOV_DEG) -> F64:
    f = (width / 2.0) / math.tan(math.radians(fov_deg) / 2.0)
    return np.array([[f, 0.0, (width - 1) / 2.0], [0.0, f, (height - 1) / 2.0], [0.0, 0.0, 1.0]])


def _nearest_rotation(m: F64) -> F64:
    u, _, vt = np.linalg.svd(m)
    r = u @ vt
    if np.linalg.det(r) < 0:
        r = u @ np.diag([1.0, 1.0, -1.0]) @ vt
    return np.asarray(r, dtype=np.float64)


def _bearing_rotation(k_inv: F64, key_pts: F64, cur_pts: F64) -> F64:
    def bearings(points: F64) -> F64:
        b = (k_inv @ np.c_[points, np.ones(len(points))].T).T
        return np.asarray(b / np.linalg.norm(b, axis=1, keepdims=True), dtype=np.float64)

    return _nearest_rotation(bearings(cur_pts).T @ bearings(key_pts))


@dataclass
class _Keyframe:
    gray: npt.NDArray[np.uint8]
    points: npt.NDArray[np.float32]  # (N, 1, 2) corners in the keyframe
    rotation: F64  # camera-to-world rotation of the keyframe
    position: F64
    translating: bool = False  # parallax seen since this keyframe: no pure-rotation reading
    direction: F64 | None = None  # t of the window (X_cur = R X_key + t), its sign fixed
    frames: int = 0  # frames read since the keyframe
    along: list[F64] = field(default_factory=list)  # per reading, per corner (see _along)


@dataclass
class CpuPoseEstimator:
    """Feed frames in order with ``update``; it returns each frame's camera-to-world pose."""

    intrinsics: F64 | None = None  # of the full-size frame; None = 70 degree FOV
    name: str = "cpu_estimator"
    _k: F64 | None = None
    _scale: float = 1.0
    _key: _Keyframe | None = None
    _prev_gray: npt.NDArray[np.uint8] | None = None
    _tracked: npt.NDArray[np.float32] | None = None  # current positions of the keyframe corners
    _alive: npt.NDArray[np.bool_] | None = None
    _last: F64 = field(default_factory=lambda: np.eye(4))
    lost_tracks: int = 0

    def _prepare(self, image: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        h, w = image.shape[:2]
        scale = ESTIMATOR_WIDTH / w if w > ESTIMATOR_WIDTH else 1.0
        if self._k is None:
            size = (round(w * scale), round(h * scale))
            if self.intrinsics is not None:
                k = np.asarray(self.intrinsics, dtype=np.float64).copy()
                k[:2, :2] *= scale
                k[0, 2] = (k[0, 2] + 0.5) * scale - 0.5
                k[1, 2] = (k[1, 2] + 0.5) * scale - 0.5
                self._k = k
            else:
                self._k = default_intrinsics(*size)
            self._scale = scale
        gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY) if image.ndim == 3 else image
        if self._scale != 1.0:
            gray = cv2.resize(
                gray, None, fx=self._scale, fy=self._scale, interpolation=cv2.INTER_AREA
            )
        return np.ascontiguousarray(gray)

    def _new_keyframe(self, gray: npt.NDArray[np.uint8], pose: F64) -> None:
        corners = cv2.goodFeaturesToTrack(gray, MAX_CORNERS, 0.01, 7)
        points = (
            corners.astype(np.float32) if corners is not None else np.zeros((0, 1, 2), np.float32)
        )
        self._key = _Keyframe(gray, points, pose[:3, :3].copy(), pose[:3, 3].copy())
        self._tracked = points.copy()
        self._alive = np.ones(len(points), bool)

    def update(self, image: npt.NDArray[np.uint8]) -> F64:
        gray = self._prepare(image)
        if self._key is None or self._prev_gray is None:
            self._new_keyframe(gray, self._last)
            self._prev_gray = gray
            return self._last.copy()
        assert self._tracked is not None and self._alive is not None and self._k is not None
        if len(self._tracked):
            nxt, status, _ = cv2.calcOpticalFlowPyrLK(
                self._prev_gray,
                gray,
                self._tracked,
                None,  # type: ignore[call-overload, unused-ignore]  # OpenCV 5.1 stubs take None
                winSize=(21, 21),
                maxLevel=3,
            )
            self._alive &= np.asarray(status).ravel().astype(bool)
            self._tracked = np.asarray(nxt, dtype=np.float32)
        self._prev_gray = gray
        key_pts = self._key.points[self._alive].reshape(-1, 2).astype(np.float64)
        cur_pts = self._tracked[self._alive].reshape(-1, 2).astype(np.float64)
        if len(key_pts) < MIN_TRACKED:
            self.lost_tracks += 1
            self._new_keyframe(gray, self._last)
            return self._last.copy()
        self._key.frames += 1
        relative = self._relative_pose(key_pts, cur_pts)
        if relative is not None:
            r_rel, steps = relative  # X_cur = r_rel X_key + t; steps: frames moved along -t
            rotation = self._key.rotation @ r_rel.T
            position = self._last[:3, 3].copy()
            if steps and self._key.direction is not None:
                heading = rotation @ -self._key.direction  # -t: travel, current camera axes
                position += STEP_PER_FRAME * steps * heading
            pose = np.eye(4)
            pose[:3, :3], pose[:3, 3] = rotation, position
            self._last = pose
        # 90th percentile: under forward motion the median (far, central) point hardly moves.
        displacement = float(np.percentile(np.linalg.norm(cur_pts - key_pts, axis=1), 90))
        if displacement > NEW_KEYFRAME_PX or self._alive.sum() < 0.5 * len(self._alive):
            self._new_keyframe(gray, self._last)
        return self._last.copy()

    def _along(self, r_pose: F64, key_pts: F64, cur_pts: F64, direction: F64) -> F64:
        """Per keyframe corner (NaN where lost): its flow left after removing the rotation,
        projected on the flow a camera moving along -``direction`` would cause, in pixels.

        A translation m moves the de-rotated normalised point x by (x m_z - m_xy) / Z, Z > 0,
        so a corner's projection grows while the camera goes along m and shrinks while it
        comes back, whatever its depth: the trend of the median says which way, not how far."""
        assert self._k is not None and self._alive is not None and self._key is not None
        k_inv: F64 = np.asarray(np.linalg.inv(self._k), dtype=np.float64)
        key_n = (k_inv @ np.c_[key_pts, np.ones(len(key_pts))].T).T
        pred = (r_pose @ key_n.T).T
        pred = pred[:, :2] / pred[:, 2:3]
        cur_n = (k_inv @ np.c_[cur_pts, np.ones(len(cur_pts))].T).T[:, :2]
        motion = -direction
        field_ = pred * motion[2] - motion[:2]
        norm = np.maximum(np.linalg.norm(field_, axis=1), 1e-9)
        along = np.full(len(self._key.points), np.nan)
        along[self._alive] = (
            np.einsum("ij,ij->i", cur_n - pred, field_) / norm * float(self._k[0, 0])
        )
        return along

    def _steps(self, r_pose: F64, key_pts: F64, cur_pts: F64, t: F64) -> int:
        """Frames this reading moved the camera along -t (signed), at a constant speed.

        How far a frame moves is not measured: parallax follows the scene's depth (a square's
        four legs see four streets and came out at four scales, and did not close), while the
        keys command one speed. The window's direction is trusted once its parallax reaches
        ``HEADING_PARALLAX_PX``; its sign is the one the flow agrees with (the cheirality vote
        of a short baseline flips), and every frame since the keyframe counts as moved. From
        then on each frame counts +1, -1 or 0 by the trend of the corners' projections over
        the last ``SENSE_FRAMES`` readings (a dolly's turnaround inside a window)."""
        key = self._key
        assert key is not None
        t = t / max(float(np.linalg.norm(t)), 1e-12)
        if key.direction is None:
            along = self._along(r_pose, key_pts, cur_pts, t)
            # the near corners: far ones (and the sky) show no parallax under any motion
            residual = float(np.nanpercentile(np.abs(along), 100 - NEAR_PERCENT))
            if residual < HEADING_PARALLAX_PX:
                return 0
            if float(np.nanmedian(along)) < 0:
                t, along = -t, -along
            key.direction = t
            key.along.append(along)
            return key.frames
        if float(t @ key.direction) < 0:
            t = -t
        # a later reading refines the axis; one far off it is a degenerate fit, not a turn
        if float(t @ key.direction) >= math.cos(math.radians(HEADING_TOLERANCE_DEG)):
            key.direction = t
        along = self._along(r_pose, key_pts, cur_pts, key.direction)
        back = min(SENSE_FRAMES, len(key.along))
        key.along.append(along)
        before = key.along[-1 - back]
        both = np.isfinite(along) & np.isfinite(before)
        if not both.any():
            return 0
        # the trend of the near corners: far ones (and the sky) show no parallax at all
        reach = np.maximum(np.abs(along[both]), np.abs(before[both]))
        near = reach >= np.percentile(reach, 100 - NEAR_PERCENT)
        trend = float(np.median((along[both] - before[both])[near]))
        if abs(trend) < STILL_PX_PER_FRAME * back:
            return 0
        return 1 if trend > 0 else -1

    def _relative_pose(self, key_pts: F64, cur_pts: F64) -> tuple[F64, int] | None:
        assert self._k is not None
        k: F64 = self._k
        k_inv: F64 = np.asarray(np.linalg.inv(k), dtype=np.float64)
        if float(np.percentile(np.linalg.norm(cur_pts - key_pts, axis=1), 90)) < 0.05:
            return np.eye(3), 0
        # When the essential matrix cannot be read (a turn starting inside a window that
        # translated, seen mostly through the sky), the rotation of the bearings still can:
        # keeping the last pose instead lost the whole turn (7.5 degrees on square_loop).
        fallback: tuple[F64, int] | None = None
        h, inliers = cv2.findHomography(key_pts, cur_pts, cv2.RANSAC, HOMOGRAPHY_RANSAC_PX)
        if h is not None and int(inliers.sum()) >= 8:
            m = k_inv @ h @ k
            m = m / np.cbrt(np.linalg.det(m))
            # The rotation itself: Kabsch on the inliers' bearing vectors (b_cur = R b_key),
            # more accurate than the nearest rotation to the homography.
            keep = inliers.ravel() > 0
            r = _bearing_rotation(k_inv, key_pts[keep], cur_pts[keep])
            fallback = (r, 0)
            predicted = (k @ r @ k_inv @ np.c_[key_pts, np.ones(len(key_pts))].T).T
            predicted = predicted[:, :2] / predicted[:, 2:3]
            residual = np.linalg.norm(predicted - cur_pts, axis=1)
            # Far points show no parallax under any motion, so the test is on the near ones:
            # a pure rotation leaves (almost) every point where R predicts it.
            moved = float(np.mean(residual > PARALLAX_PX))
            assert self._key is not None
            rotation_only = moved < PARALLAX_SHARE and np.abs(m - r).max() < ORTHOGONALITY_TOL
            if rotation_only and not self._key.translating:
                return r, 0
        e, inliers = cv2.findEssentialMat(key_pts, cur_pts, k, cv2.RANSAC, 0.999, 0.5)
        if e is None or e.shape != (3, 3):
            return fallback
        assert self._key is not None
        self._key.translating = True  # once seen, the window's parallax only grows
        _, r_cv, t, mask = cv2.recoverPose(e, key_pts, cur_pts, k, mask=inliers)
        r_pose: F64 = np.asarray(r_cv, dtype=np.float64)
        good = np.asarray(mask).ravel() > 0
        if good.sum() < 8:
            return fallback
        direction = np.asarray(t, dtype=np.float64).ravel()
        return r_pose, self._steps(r_pose, key_pts, cur_pts, direction)

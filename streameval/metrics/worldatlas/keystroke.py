"""Keystroke nATEt (docs/methods.md#keystroke_natet) and its rotational twin nATEr
(docs/methods.md#keystroke_nater), on a pose track.

The target path starts at the predicted pose at the start of every constant-action segment
and follows the commanded camera axis with the predicted amplitude (amplitude_calibrated =
false): the metric judges the *shape* of the motion, not its scale or speed. Errors are
time-weighted over observed frame intervals, trapezoid per interval, no arc-length resampling.
An interval whose poses are missing or non-finite is a gap in the data, never a freeze.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from streameval.core.arrays import F64
from streameval.errors import KeystrokeInputError
from streameval.metrics.worldatlas.constants import (
    MIN_PATH_LENGTH,
    MIN_ROTATION_DEGREES,
    MOVE_SPEED_THRESHOLD,
)

# Commanded camera-frame axes, OpenCV (x right, y down, z forward).
TRANSLATION_AXIS: dict[str, tuple[float, float, float]] = {
    "W": (0.0, 0.0, 1.0),
    "S": (0.0, 0.0, -1.0),
    "A": (-1.0, 0.0, 0.0),
    "D": (1.0, 0.0, 0.0),
}
# Sign of the yaw about camera y: R turns the optical axis (+z) toward +x (right), as the
# WorldAtlas's pan_right does; the reference's target turns the other way
# (docs/methods.md#other-documented-differences).
YAW_SIGN: dict[str, float] = {"R": 1.0, "L": -1.0}


def _yaw(degrees: float) -> F64:
    c, s = np.cos(np.radians(degrees)), np.sin(np.radians(degrees))
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _angle(a: F64, b: F64) -> float:
    cos = (np.trace(a.T @ b) - 1.0) * 0.5
    return float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))))


def _segments(keys: Sequence[str]) -> list[tuple[str, int, int]]:
    runs: list[tuple[str, int, int]] = []
    start = 0
    for t in range(1, len(keys) + 1):
        if t == len(keys) or keys[t] != keys[start]:
            runs.append((keys[start], start, t))
            start = t
    return runs


class _SegmentTarget:
    """The commanded path of one constant-action segment, at fraction f of the segment.

    It starts at the predicted pose and moves along the commanded axis (translation) or turns
    about camera y (yaw) by the predicted start-to-end amplitude, at constant speed.
    """

    def __init__(self, key: str, start: F64, end: F64) -> None:
        self.key = key
        self.p0 = start[:3, 3]
        self.r0 = start[:3, :3]
        self.step = self.r0 @ np.asarray(TRANSLATION_AXIS.get(key, (0.0, 0.0, 0.0)))
        self.step = self.step * float(np.linalg.norm(end[:3, 3] - self.p0))
        self.turn = YAW_SIGN.get(key, 0.0) * _angle(self.r0, end[:3, :3])

    def __call__(self, f: float) -> tuple[F64, F64]:
        rotation = self.r0 @ _yaw(self.turn * f) if self.turn else self.r0
        return self.p0 + self.step * f, rotation


def _segment_targets(key: str, start: F64, end: F64) -> _SegmentTarget:
    return _SegmentTarget(key, start, end)


@dataclass(frozen=True, slots=True)
class KeystrokeErrors:
    """Everything nATEt and nATEr are made of, for the results' details."""

    ate_t: float  # time-weighted mean position error, pose units
    path_length: float  # l_obs
    shape_t: float
    n_active: int
    n_mismatch: int
    ate_r_degrees: float
    total_rotation_degrees: float
    observed_intervals: int
    missing_intervals: int

    @property
    def translation_applicable(self) -> bool:
        """No translation commanded nor observed: nATEt is not_applicable
        (docs/methods.md#keystroke_natet)."""
        return self.n_active > 0

    @property
    def activity_t(self) -> float:
        return self.n_mismatch / self.n_active if self.n_active else 0.0

    @property
    def natet(self) -> float:
        return max(self.shape_t, self.activity_t)

    @property
    def nater(self) -> float:
        return min(
            max(self.ate_r_degrees / max(self.total_rotation_degrees, MIN_ROTATION_DEGREES), 0.0),
            1.0,
        )


def keystroke_errors(
    poses_c2w: NDArray[np.generic],
    frame_keys: Sequence[str],
    *,
    fps: float,
    move_speed_threshold: float = MOVE_SPEED_THRESHOLD,
    min_path_length: float = MIN_PATH_LENGTH,
) -> KeystrokeErrors:
    """The nATEt equations of docs/methods.md#keystroke_natet and the rotational ATE, over frames
    with both a pose and a key.

    ``frame_keys[t]`` is the key that conditioned frame t (``-`` for none). Pose t is where
    the camera is at frame t, so interval (t, t+1) is driven by ``frame_keys[t + 1]``.
    """
    poses = np.asarray(poses_c2w, dtype=np.float64)
    if poses.ndim != 3 or poses.shape[1:] != (4, 4):
        raise KeystrokeInputError(f"expected poses of shape (T, 4, 4), got {poses.shape}")
    n = min(len(poses), len(frame_keys))
    if n < 2:
        raise KeystrokeInputError(f"need at least two frames with a pose and a key, got {n}")
    keys = [str(k) for k in frame_keys[:n]]
    finite_rows: NDArray[np.bool_] = np.all(np.isfinite(poses[:n].reshape(n, -1)), axis=1)
    finite = [bool(v) for v in finite_rows]
    weight = 1.0 / float(fps)
    err_t = err_r = total_w = path = rotation = 0.0
    n_active = n_mismatch = observed = missing = 0
    for key, s, e in _segments(keys[1:]):
        # Interval (t, t+1) for t in [s, e) is driven by keys[t + 1]; the segment spans poses s..e.
        targets = _segment_targets(key, poses[s], poses[e]) if finite[s] and finite[e] else None
        for t in range(s, e):
            if targets is None or not (finite[t] and finite[t + 1]):
                missing += 1
                continue
            observed += 1
            step = float(np.linalg.norm(poses[t + 1, :3, 3] - poses[t, :3, 3]))
            path += step
            rotation += _angle(poses[t, :3, :3], poses[t + 1, :3, :3])
            commanded = key in TRANSLATION_AXIS
            moving = step / weight > move_speed_threshold
            n_active += int(commanded or moving)
            n_mismatch += int(commanded != moving)
            (pa, ra), (pb, rb) = targets((t - s) / (e - s)), targets((t + 1 - s) / (e - s))
            ea = float(np.linalg.norm(poses[t, :3, 3] - pa))
            eb = float(np.linalg.norm(poses[t + 1, :3, 3] - pb))
            err_t += weight * (ea + eb) / 2.0
            ra_err = _angle(poses[t, :3, :3], ra) + _angle(poses[t + 1, :3, :3], rb)
            err_r += weight * ra_err / 2.0
            total_w += weight
    ate_t = err_t / total_w if total_w else 0.0
    ate_r = err_r / total_w if total_w else 0.0
    shape = min(max(ate_t / max(path, min_path_length), 0.0), 1.0)
    return KeystrokeErrors(
        ate_t, path, shape, n_active, n_mismatch, ate_r, rotation, observed, missing
    )

"""The provisional return gate (``gate_online``) against the kernel run on every prefix."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streameval.metrics.worldatlas.gate_online import OnlineReturnGate
from streameval.metrics.worldatlas.revisit import return_gate

FPS = 24.0


def yaw_track(degrees: list[float]) -> np.ndarray:
    poses = np.tile(np.eye(4), (len(degrees), 1, 1))
    for t, deg in enumerate(degrees):
        a = math.radians(deg)
        poses[t, :3, :3] = [
            [math.cos(a), 0, math.sin(a)],
            [0, 1, 0],
            [-math.sin(a), 0, math.cos(a)],
        ]
    return poses


def dolly_track(steps: list[float]) -> np.ndarray:
    poses = np.tile(np.eye(4), (len(steps), 1, 1))
    poses[:, 2, 3] = np.cumsum(steps)
    return poses


def first_prefix(poses: np.ndarray, what: str) -> int | None:
    """Naive reference: the first frame t where the kernel on poses[:t+1] says ``what``."""
    for t in range(1, len(poses)):
        if getattr(return_gate(poses[: t + 1], fps=FPS), what):
            return t
    return None


def online(poses: np.ndarray) -> OnlineReturnGate:
    gate = OnlineReturnGate(FPS)
    for t, pose in enumerate(poses):
        gate.update(t, pose)
    return gate


YAW_180 = [1.25 * (t + 1) for t in range(144)] + [180 - 1.25 * (t + 1) for t in range(144)]
DOLLY = [0.05] * 96 + [-0.05] * 96


@pytest.mark.parametrize(
    "poses", [yaw_track(YAW_180), dolly_track(DOLLY)], ids=["yaw_loop_180", "dolly"]
)
def test_latches_flip_where_the_kernel_on_the_prefix_first_says_so(poses: np.ndarray) -> None:
    progress = online(poses).progress()
    assert progress.departed and progress.returned
    assert progress.departure_frame == first_prefix(poses, "departed")
    assert progress.return_frame == first_prefix(poses, "returned")
    final = return_gate(poses, fps=FPS)
    assert final.passed


def test_rotation_only_flips_at_81_and_back_at_99_degrees() -> None:
    """alpha*tau = 0.45 of 180 degrees is 81 away from frame 0 (yaw 1.25 (t+1)): frame 65. A
    return pairs frame j with the same view on the way out (286 - j) once the camera went 81
    degrees past it, i.e. a view at most 99 degrees: 98.75 on the way back is frame 208."""
    progress = online(yaw_track(YAW_180)).progress()
    assert progress.departure_frame == 65
    assert progress.return_frame == 208 and progress.revisit_of == 286 - 208


def test_a_camera_that_never_comes_back_departs_but_never_returns() -> None:
    gate = online(dolly_track([0.05] * 200))
    state = gate.progress()
    assert state.departed and not state.returned
    result = state.result()
    assert result.status == "missing" and result.raw is None
    assert "departed at frame" in (result.reason or "")
    assert not return_gate(dolly_track([0.05] * 200), fps=FPS).returned


def test_still_camera_neither_departs_nor_returns() -> None:
    state = online(np.tile(np.eye(4), (100, 1, 1))).progress()
    assert not state.departed and not state.returned
    assert state.result().details["departure_reached"] is False


def test_non_finite_pose_is_skipped() -> None:
    gate = OnlineReturnGate(FPS)
    gate.update(0, np.eye(4))
    gate.update(1, np.full((4, 4), np.nan))
    assert gate.progress().frames == 1

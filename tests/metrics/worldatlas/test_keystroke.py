"""nATEt / nATEr on hand-built pose tracks with known truth
(docs/methods.md#keystroke_natet, docs/methods.md#keystroke_nater)."""

from __future__ import annotations

import numpy as np
import pytest
from streameval.protocol.memory_loop import ideal_poses, memory_loop

from streameval.metrics.worldatlas.keystroke import keystroke_errors

FPS = 24.0


def _loop(name: str) -> tuple[np.ndarray, list[str]]:
    loop = memory_loop(name)
    return ideal_poses(loop), loop.schedule().frame_keys()


def test_exact_dolly_loop_scores_zero() -> None:
    poses, keys = _loop("dolly_loop")
    k = keystroke_errors(poses, keys, fps=FPS)
    assert k.translation_applicable
    assert k.ate_t < 1e-9 and k.n_mismatch == 0
    assert k.natet == pytest.approx(0.0, abs=1e-9)
    assert k.path_length == pytest.approx(8.0, abs=0.01)


def test_dolly_with_a_stall_raises_the_activity_term() -> None:
    poses, keys = _loop("dolly_loop")
    stalled = poses.copy()
    # Outbound second token: frozen for its first half, then double speed (same end pose).
    start, end = 180, 360
    mid = (start + end) // 2
    for t in range(start, end + 1):
        f = 0.0 if t < mid else (t - mid) / (end - mid)
        stalled[t] = poses[start].copy()
        stalled[t, :3, 3] = poses[start, :3, 3] + f * (poses[end, :3, 3] - poses[start, :3, 3])
    clean = keystroke_errors(poses, keys, fps=FPS)
    bad = keystroke_errors(stalled, keys, fps=FPS)
    assert bad.n_mismatch == mid - start  # every stalled interval disagrees with its command
    assert bad.activity_t == pytest.approx((mid - start) / (len(keys) - 1))
    assert bad.natet >= bad.activity_t > clean.natet
    assert bad.ate_t > clean.ate_t


def test_no_translation_commanded_nor_observed_is_not_applicable() -> None:
    poses, keys = _loop("yaw_loop_180")
    k = keystroke_errors(poses, keys, fps=FPS)
    assert not k.translation_applicable and k.n_active == 0
    assert k.ate_r_degrees < 1e-6 and k.nater == pytest.approx(0.0, abs=1e-9)
    assert k.total_rotation_degrees == pytest.approx(360.0, abs=0.5)


def test_turning_the_wrong_way_is_a_full_rotational_error() -> None:
    poses, keys = _loop("yaw_loop_180")
    mirrored = poses.copy()
    flip = np.diag([-1.0, 1.0, 1.0])
    mirrored[:, :3, :3] = flip @ poses[:, :3, :3] @ flip  # L instead of R and back
    k = keystroke_errors(mirrored, keys, fps=FPS)
    assert k.nater > 0.2  # 90 deg mean error over 360 deg turned (clean: 0)


def test_uncommanded_motion_counts_as_activity_error() -> None:
    poses, keys = _loop("yaw_loop_360")
    drifting = poses.copy()
    drifting[:, 2, 3] = np.arange(len(poses)) * 0.01  # 0.24 units/s, never commanded
    k = keystroke_errors(drifting, keys, fps=FPS)
    assert k.translation_applicable and k.activity_t == pytest.approx(1.0)
    assert k.natet == 1.0


def test_missing_poses_are_gaps_not_freezes() -> None:
    poses, keys = _loop("dolly_loop")
    holed = poses.copy()
    holed[400:410] = np.nan
    k = keystroke_errors(holed, keys, fps=FPS)
    assert k.missing_intervals == 11 and k.n_mismatch == 0
    assert k.natet == pytest.approx(0.0, abs=1e-9)


def test_against_naive_time_weighted_mean() -> None:
    """One W segment with noise: ATE_t as the plain trapezoid over frames, written out."""
    rng = np.random.default_rng(1)
    n = 49
    poses = np.repeat(np.eye(4)[None], n, axis=0)
    poses[:, 2, 3] = np.linspace(0, 2.0, n)
    poses[:, :3, 3] += rng.normal(0, 0.02, (n, 3))
    keys = ["W"] * n
    amp = np.linalg.norm(poses[-1, :3, 3] - poses[0, :3, 3])
    f = np.arange(n) / (n - 1)
    target = poses[0, :3, 3] + np.outer(f, [0.0, 0.0, amp])
    err = np.linalg.norm(poses[:, :3, 3] - target, axis=1)
    ate = np.mean((err[:-1] + err[1:]) / 2)
    path = np.linalg.norm(np.diff(poses[:, :3, 3], axis=0), axis=1).sum()
    k = keystroke_errors(poses, keys, fps=FPS)
    assert k.ate_t == pytest.approx(ate, rel=1e-12)
    assert k.path_length == pytest.approx(path, rel=1e-12)
    assert k.shape_t == pytest.approx(ate / path, rel=1e-12)

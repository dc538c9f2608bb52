"""Return gate and split on hand-built pose tracks
(docs/methods.md#memory_return_gate, docs/methods.md#memory_scene_f1)."""

from __future__ import annotations

import numpy as np
import pytest
from streameval.protocol.memory_loop import ideal_poses, memory_loop

from streameval.errors import PoseTrackError
from streameval.metrics.worldatlas.pose_distance import pose_distances
from streameval.metrics.worldatlas.revisit import (
    choose_split,
    episode_split,
    nearest_pose_pairs,
    return_gate,
    scoring_pairs,
)


def _naive_distance(poses: np.ndarray) -> np.ndarray:
    """WorldAtlas's pose distance (docs/methods.md#memory_return_gate), pair by pair."""
    p = poses[:, :3, 3]
    extent = max(np.linalg.norm(p - p[0], axis=1))
    n = len(poses)
    d = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            r = poses[i, :3, :3].T @ poses[j, :3, :3]
            theta = np.degrees(np.arccos(np.clip((np.trace(r) - 1) / 2, -1, 1))) if i != j else 0.0
            trans = 0.0 if extent <= 1e-6 else np.linalg.norm(p[i] - p[j]) / extent
            d[i, j] = trans + theta / 180.0
    return d


def test_distance_matches_naive_reference() -> None:
    rng = np.random.default_rng(3)
    poses = ideal_poses(memory_loop("palindrome_loop", fps=4.0))
    poses[:, :3, 3] += rng.normal(0, 0.01, (len(poses), 3))
    np.testing.assert_allclose(pose_distances(poses).distance, _naive_distance(poses), atol=1e-9)


def test_inplace_yaw_360_passes_through_rotation_only_fallback() -> None:
    poses = ideal_poses(memory_loop("yaw_loop_360"))
    poses[:, :3, 3] += np.random.default_rng(0).uniform(-2e-7, 2e-7, (len(poses), 3))
    gate = return_gate(poses, fps=24.0)
    assert gate.scale_is_degenerate
    assert gate.departed and gate.returned and gate.passed
    assert gate.departure_distance == pytest.approx(1.0, abs=0.01)  # 180 deg away at the middle
    split, _ = choose_split(gate, poses)
    assert split is not None and split.source == "longest_supported_revisit_episode"
    i, j = split.episode  # type: ignore[misc]
    assert j - i > 1300  # the start view is revisited at the end
    assert abs(split.turnaround - (i + j) / 2) < 30  # 180 deg away, half way


def test_model_that_never_returns_is_no_revisit_not_forgetting() -> None:
    poses = ideal_poses(memory_loop("dolly_loop"))
    poses[720:] = poses[719]  # freezes at the far end
    gate = return_gate(poses, fps=24.0)
    assert gate.departed and not gate.returned and not gate.passed
    assert gate.failure_reason is not None and gate.failure_reason.startswith("no revisit")
    pairs, source = scoring_pairs(gate, poses)
    assert source == "nearest_pose_fallback" and len(pairs) == len(poses) - 24
    split, reason = choose_split(gate, poses)
    assert reason is None and split is not None
    assert split.source == "temporal_midpoint_fallback"
    assert (split.outbound, split.revisit) == (range(0, 720), range(720, 1440))


def test_still_camera_never_departs() -> None:
    poses = np.repeat(np.eye(4)[None], 100, axis=0)
    gate = return_gate(poses, fps=24.0)
    assert not gate.departed
    assert gate.failure_reason is not None and "never departed" in gate.failure_reason


def test_fallback_pairs_have_no_thresholds() -> None:
    poses = ideal_poses(memory_loop("dolly_loop", fps=4.0))
    pairs = nearest_pose_pairs(poses, fps=4.0)
    assert len(pairs) == len(poses) - 4
    d = pose_distances(poses).distance
    for _first, j, dist, *_ in pairs:
        assert dist == pytest.approx(d[int(j), : int(j) - 4 + 1].min())


def test_episode_split_prefers_longest_gap_then_earliest() -> None:
    poses = ideal_poses(memory_loop("double_yaw_loop"))
    gate = return_gate(poses, fps=24.0)
    split = episode_split(gate.pairs, pose_distances(poses).distance)
    assert split is not None and split.episode is not None
    i, j = split.episode
    longest = int((gate.pairs[:, 1] - gate.pairs[:, 0]).max())
    assert j - i == longest
    # frames after the episode are excluded from the return side
    assert split.return_end == j + 1


def test_too_short_or_nan_tracks_raise() -> None:
    with pytest.raises(PoseTrackError):
        return_gate(np.eye(4)[None], fps=24.0)
    poses = np.repeat(np.eye(4)[None], 10, axis=0)
    poses[3, 0, 3] = np.nan
    with pytest.raises(PoseTrackError, match="pose 3"):
        return_gate(poses, fps=24.0)

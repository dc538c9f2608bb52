"""Per-metric statuses of a memory_loop episode: absent inputs, bad sidecars, failed gates."""

from __future__ import annotations

import numpy as np
import pytest
from streameval.protocol.memory_loop import ideal_poses, memory_loop

from streameval.metrics.worldatlas.episode import (
    WORLDATLAS_METRICS,
    MemoryLoopInputs,
    score_memory_loop,
)
from streameval.metrics.worldatlas.scene_f1 import DepthSidecar

FPS = 24.0


def _box_depth(n: int, h: int = 12, w: int = 16) -> np.ndarray:
    """A camera in a box-like room: depth varies over the image, never zero."""
    v, u = np.mgrid[0:h, 0:w]
    return np.repeat((4.0 + 0.1 * u + 0.05 * v)[None].astype(np.float32), n, axis=0)


def _inputs(name: str = "dolly_loop", **changes: object) -> MemoryLoopInputs:
    loop = memory_loop(name, fps=FPS, seconds=12.0)
    poses = ideal_poses(loop)
    depth = _box_depth(len(poses))
    k = np.array([[14.0, 0, 7.5], [0, 14.0, 5.5], [0, 0, 1]])
    base = MemoryLoopInputs(
        poses, "model", loop.schedule().frame_keys(), FPS, DepthSidecar(depth, depth > 0, k)
    )
    values = {f: getattr(base, f) for f in base.__dataclass_fields__}
    values.update(changes)
    return MemoryLoopInputs(**values)  # type: ignore[arg-type]


def test_clean_episode_is_official_everywhere() -> None:
    results = score_memory_loop(_inputs())
    assert {k: r.status for k, r in results.items()} == dict.fromkeys(
        WORLDATLAS_METRICS, "official"
    )
    f1 = results["memory_scene_f1"]
    assert f1.details["split_source"] == "longest_supported_revisit_episode"
    assert f1.details["pair_source"] == "strict"
    assert results["memory_return_gate"].raw == 1.0


def test_no_pose_track_is_not_applicable() -> None:
    results = score_memory_loop(_inputs(poses=None, pose_source="none"))
    assert all(r.status == "not_applicable" for r in results.values())
    assert all(r.raw is None and r.normalized is None for r in results.values())


@pytest.mark.parametrize(
    ("poses", "match"),
    [
        (np.zeros((10, 3, 4)), "shape"),
        (np.eye(4)[None], "at least 2"),
        ("nan", "not finite"),
    ],
)
def test_bad_pose_sidecar_is_missing_with_reason(poses: object, match: str) -> None:
    if isinstance(poses, str):
        poses = ideal_poses(memory_loop("dolly_loop", fps=FPS, seconds=12.0))
        poses[100, 1, 1] = np.nan  # type: ignore[index]
    results = score_memory_loop(_inputs(poses=poses))
    for r in results.values():
        assert r.status == "missing" and r.reason is not None and match in r.reason


def test_depth_mask_of_the_wrong_shape_is_missing_for_scene_f1_only() -> None:
    base = _inputs()
    assert base.depth is not None
    bad = DepthSidecar(base.depth.depth, base.depth.valid[:, :5], base.depth.intrinsics)
    results = score_memory_loop(_inputs(depth=bad))
    assert results["memory_scene_f1"].status == "missing"
    assert "depth_valid_mask shape" in (results["memory_scene_f1"].reason or "")
    assert results["memory_return_gate"].status == "official"


def test_no_depth_sidecar_is_not_applicable() -> None:
    results = score_memory_loop(_inputs(depth=None))
    assert results["memory_scene_f1"].status == "not_applicable"
    assert "depth_metric" in (results["memory_scene_f1"].reason or "")


@pytest.mark.parametrize("fx", [0.0, np.nan, np.inf])
def test_zero_or_nonfinite_intrinsics_are_an_explicit_unavailable_result(fx: float) -> None:
    base = _inputs()
    assert base.depth is not None
    k = base.depth.intrinsics.copy()
    k[0, 0] = fx
    results = score_memory_loop(_inputs(depth=DepthSidecar(base.depth.depth, base.depth.valid, k)))
    f1 = results["memory_scene_f1"]
    assert f1.status == "missing" and "cannot be projected" in (f1.reason or "")
    assert f1.raw is None


def test_failed_gate_still_measures_scene_on_temporal_halves() -> None:
    poses = ideal_poses(memory_loop("dolly_loop", fps=FPS, seconds=12.0))
    poses[len(poses) // 2 :] = poses[len(poses) // 2 - 1]  # never comes back
    results = score_memory_loop(_inputs(poses=poses))
    gate, f1 = results["memory_return_gate"], results["memory_scene_f1"]
    assert gate.status == "official" and gate.raw == 0.0
    assert gate.details["gate_failure_reason"].startswith("no revisit")
    assert gate.details["pair_source"] == "nearest_pose_fallback"
    assert f1.status == "official"
    assert f1.details["split_source"] == "temporal_midpoint_fallback"
    assert f1.details["gate_passed"] is False and f1.details["task_value"] == 0.0


def test_scale_free_estimate_keeps_natet_not_applicable() -> None:
    results = score_memory_loop(_inputs(pose_source="cpu_estimator", translation_scale_known=False))
    assert results["keystroke_natet"].status == "not_applicable"
    assert results["keystroke_nater"].status == "official"

"""The closed-loop memory metrics' statuses from a cache (docs/methods.md#statuses), the kept
frames' round trip, and the Gram backends (CPU default, VGG on tiny random weights)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from streameval.errors import BackendUnavailableError
from streameval.metrics.worldatlas.closed_loop_scores import (
    CLOSED_LOOP_METRICS,
    ClosedLoopFrames,
    closed_loop_pairs,
    score_closed_loop,
)
from streameval.metrics.worldatlas.revisit import return_gate
from streameval.perception.gram import FilterBankGram, VggGram, create_gram_backend
from streameval.results.cache.closed_loop import load_closed_loop, save_closed_loop

FPS = 8.0


def yaw_track(degrees: list[float]) -> NDArray[np.float64]:
    poses = np.repeat(np.eye(4)[None], len(degrees), axis=0)
    for k, d in enumerate(degrees):
        c, s = math.cos(math.radians(d)), math.sin(math.radians(d))
        poses[k, :3, :3] = [[c, 0, s], [0, 1, 0], [-s, 0, c]]
    return poses


def frame(seed: int) -> NDArray[np.uint8]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(24, 32, 3), dtype=np.uint8)


def kept_for(poses: NDArray[np.float64]) -> ClosedLoopFrames:
    pairs, _ = closed_loop_pairs(return_gate(poses, fps=FPS), poses)
    index = pairs[:, :2].astype(np.int64)
    frames = {int(i): frame(int(i) % 3) for i in np.unique(index)}
    features = np.ones((len(index), 2, 4), np.float32)
    return ClosedLoopFrames(index, frames, 320, features=features, feature_backend="toy")


LOOP = [0.0] * 4 + [float(d) for d in range(0, 181, 20)] + [180.0 - d for d in range(0, 181, 20)]


def test_no_pose_track_is_not_applicable_never_zero() -> None:
    results = score_closed_loop(None, fps=FPS, pose_source="none", kept=None)
    assert set(results) == set(CLOSED_LOOP_METRICS)
    assert all(r.status == "not_applicable" and r.normalized is None for r in results.values())
    bad = score_closed_loop(None, fps=FPS, pose_source="vipe_sidecar", kept=None, pose_problem="x")
    assert all(r.status == "missing" for r in bad.values())


def test_an_older_cache_without_frames_is_not_applicable() -> None:
    poses = yaw_track(LOOP)
    results = score_closed_loop(poses, fps=FPS, pose_source="model", kept=None)
    assert all(r.status == "not_applicable" for r in results.values())
    assert "cache/closed_loop" in (results["memory_revisit_fidelity"].reason or "")


def test_a_failed_gate_does_not_block_and_says_so() -> None:
    poses = yaw_track([float(d) for d in range(0, 60, 2)])  # turns away, never comes back
    results = score_closed_loop(poses, fps=FPS, pose_source="model", kept=kept_for(poses))
    fidelity = results["memory_revisit_fidelity"]
    assert fidelity.status == "official"
    assert fidelity.details["pair_source"] == "nearest_pose_fallback"
    assert fidelity.details["gate_passed"] is False and fidelity.details["gate_failure_reason"]
    assert 0.0 <= (fidelity.normalized or 0.0) <= 1.0  # WorldAtlas's [0, 1]
    # no intrinsics: closure is not applicable, never 0
    assert results["memory_geometric_closure"].status == "not_applicable"
    # no Gram backend: rendering recovery keeps its two CIELAB terms
    rendering = results["memory_rendering_recovery"]
    assert rendering.status == "official" and rendering.details["gram_backend"] is None


def test_no_appearance_backend_leaves_fidelity_and_half_life_not_applicable() -> None:
    poses = yaw_track(LOOP)
    kept = kept_for(poses)
    kept.features, kept.feature_backend = None, None
    results = score_closed_loop(poses, fps=FPS, pose_source="model", kept=kept)
    assert results["memory_revisit_fidelity"].status == "not_applicable"
    half = results["memory_half_life"]
    assert half.status == "not_applicable" and half.details["reason_code"] == "no_fidelity"
    kept.feature_problem = "boom"
    assert (
        score_closed_loop(poses, fps=FPS, pose_source="model", kept=kept)[
            "memory_revisit_fidelity"
        ].status
        == "missing"
    )


def test_cached_pairs_must_be_the_pose_tracks() -> None:
    poses = yaw_track(LOOP)
    kept = kept_for(poses)
    kept.pairs = kept.pairs[:-1]
    results = score_closed_loop(poses, fps=FPS, pose_source="model", kept=kept)
    assert all(r.status == "missing" for r in results.values())


def test_kept_frames_round_trip_bit_for_bit(tmp_path: Path) -> None:
    poses = yaw_track(LOOP)
    kept = kept_for(poses)
    kept.gram, kept.gram_backend = np.linspace(0, 0.01, len(kept.pairs)), "cpu-filterbank-gram"
    kept.intrinsics = {int(kept.pairs[0, 0]): np.diag([30.0, 30.0, 1.0])}
    save_closed_loop(kept, tmp_path / "closed_loop")
    back = load_closed_loop(tmp_path / "closed_loop")
    assert back is not None
    assert np.array_equal(back.pairs, kept.pairs) and back.frames.keys() == kept.frames.keys()
    assert all(np.array_equal(back.frames[i], kept.frames[i]) for i in kept.frames)
    assert back.features is not None and np.array_equal(back.features, kept.features)
    assert back.gram is not None and np.array_equal(back.gram, kept.gram)
    first = score_closed_loop(poses, fps=FPS, pose_source="model", kept=kept)
    again = score_closed_loop(poses, fps=FPS, pose_source="model", kept=back)
    assert {k: v.to_json() for k, v in first.items()} == {k: v.to_json() for k, v in again.items()}
    assert load_closed_loop(tmp_path / "absent") is None


def test_gram_backends_registry_and_vgg_on_tiny_random_weights(tmp_path: Path) -> None:
    assert isinstance(create_gram_backend(), FilterBankGram)
    pytest.importorskip("torch")
    with pytest.raises(BackendUnavailableError, match=r"VGG weights .* are missing"):
        create_gram_backend("vgg16-gram", model=str(tmp_path / "none.pth"))
    tiny = VggGram("vgg16", "random", layout=(4, 4, "M", 8, "M", 8, "M", 8, "M"))
    a, b = frame(1), frame(2)
    assert tiny.distance(a, a) == 0.0
    assert tiny.distance(a, b) > 0.0
    assert tiny.distance(a, b) == tiny.distance(a, b)  # deterministic

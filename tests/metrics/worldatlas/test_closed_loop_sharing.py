"""Work shared between the closed-loop memory metrics' pairs is done once and changes no bit.

Pairs share frames (a 60 s square loop's 23 scored pairs hold 24 distinct frames), so SIFT, the
CIELAB means, the appearance features and the Gram statistic are computed once per distinct
frame, on a few threads where the work is OpenCV/numpy, and the return gate once per pose
track. Each test compares against the pair-by-pair (or the textbook) computation, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from streameval.core.arrays import Image
from streameval.core.parallel import thread_map
from streameval.engine.closed_loop_frames import keep_revisit_frames
from streameval.engine.track import WorldAtlasTrack
from streameval.metrics.worldatlas.closed_loop import (
    geometric_closure,
    geometric_closure_pair,
    rendering_recovery,
    rendering_recovery_pair,
)
from streameval.metrics.worldatlas.closed_loop_pairs import sift_correspondences
from streameval.metrics.worldatlas.pose_distance import (
    pairwise_position_distances,
    pairwise_rotation_degrees,
)
from streameval.metrics.worldatlas.revisit import return_gate
from streameval.perception.embedding import ColorHistRbf
from streameval.perception.gram import FilterBankGram, VggGram, pair_distances
from tests.metrics.worldatlas.test_closed_loop_scores import FPS, LOOP, yaw_track
from tests.metrics.worldatlas.test_memory_loop_kernels import (
    POSE_A,
    POSE_B,
    K,
    pink_texture,
    render_plane_pair,
)


def test_thread_map_keeps_order_and_raises_the_first_failure() -> None:
    def square(x: int) -> int:
        return x * x

    assert thread_map(square, list(range(20)), max_workers=3) == [x * x for x in range(20)]
    assert thread_map(square, [], max_workers=3) == []

    def fail(x: int) -> int:
        if x in (3, 7):
            raise ValueError(f"item {x}")
        return x

    with pytest.raises(ValueError, match="item 3"):
        thread_map(fail, list(range(10)), max_workers=4)


def test_sift_shared_frames_give_the_pair_by_pair_closure() -> None:
    frame_a, frame_b = render_plane_pair(POSE_B)
    other = pink_texture(5, *frame_a.shape[:2])
    # frame_a is in three pairs, frame_b in two: detected once each, on threads
    firsts, revisits = [frame_a, frame_a, frame_b, frame_a], [frame_b, other, frame_a, frame_b]
    poses_a, poses_b = [POSE_A, POSE_A, POSE_B, POSE_A], [POSE_B, POSE_B, POSE_A, POSE_B]
    shared = geometric_closure(firsts, revisits, poses_a, poses_b, [K] * 4, [K] * 4)
    alone = [
        geometric_closure_pair(a, b, pa, pb, K, K)
        for a, b, pa, pb in zip(firsts, revisits, poses_a, poses_b, strict=True)
    ]
    per_pair = shared.details["per_pair"]
    for got, want in zip(per_pair, alone, strict=True):
        assert (got is None) == (want is None)
        if want is not None:
            assert got["score"] == want.score and got["match_count"] == want.match_count
            assert got["epipolar_error_pixels"] == want.epipolar_error_pixels
    points_a, points_b = sift_correspondences(frame_a, frame_b)
    assert per_pair[0]["match_count"] == len(points_a) == len(points_b)


def test_rendering_memo_and_gram_pairs_equal_pair_by_pair() -> None:
    frame_a, frame_b = render_plane_pair(POSE_B)
    small = np.ascontiguousarray(frame_b[::2, ::2])  # resized to the first frame in each pair
    firsts, revisits = [frame_a, frame_a, frame_b], [frame_b, small, frame_a]
    gram = FilterBankGram()
    distances = pair_distances(gram, firsts, revisits)
    assert distances == [gram.distance(a, b) for a, b in zip(firsts, revisits, strict=True)]
    shared = rendering_recovery(firsts, revisits, gram_distances=distances, gram_backend="g")
    for got, a, b, g in zip(shared.details["per_pair"], firsts, revisits, distances, strict=True):
        want = rendering_recovery_pair(a, b, g)
        assert got["score"] == want.score and got["lightness_delta"] == want.lightness_delta
        assert got["chroma_delta"] == want.chroma_delta


def test_vgg_gram_pairs_equal_pair_by_pair() -> None:
    pytest.importorskip("torch")
    tiny = VggGram("vgg16", "random", layout=(4, 4, "M", 8, "M", 8, "M", 8, "M"))
    frame_a, frame_b = render_plane_pair(POSE_B)
    firsts, revisits = [frame_a, frame_a, frame_b], [frame_b, frame_a, frame_a]
    want = [tiny.distance(a, b) for a, b in zip(firsts, revisits, strict=True)]
    assert pair_distances(tiny, firsts, revisits) == want


class _PairByPair:
    """A Gram backend with ``distance`` only: asked pair by pair."""

    name = "toy"

    def distance(self, frame_a: Image, frame_b: Image) -> float:
        return float(frame_a.mean() - frame_b.mean()) ** 2


def test_a_backend_without_pair_distances_is_asked_per_pair() -> None:
    frame_a, frame_b = render_plane_pair(POSE_B)
    toy = _PairByPair()
    assert pair_distances(toy, [frame_a, frame_b], [frame_b, frame_b]) == [
        toy.distance(frame_a, frame_b),
        0.0,
    ]


def test_pairwise_positions_are_numpy_norm_bit_for_bit() -> None:
    rng = np.random.default_rng(3)
    for scale in (1e-4, 1.0, 1e4):
        positions = rng.standard_normal((97, 3)) * scale
        want = np.linalg.norm(positions[:, None, :] - positions[None, :, :], axis=2)
        got = pairwise_position_distances(positions)
        assert got.dtype == np.float64 and np.array_equal(got.view(np.int64), want.view(np.int64))


def test_pairwise_rotations_in_place_are_the_textbook_expression_bit_for_bit() -> None:
    rng = np.random.default_rng(4)
    rotations = np.linalg.qr(rng.standard_normal((97, 3, 3)))[0]
    flat = rotations.reshape(len(rotations), 9)
    want = np.degrees(np.arccos(np.clip((flat @ flat.T - 1.0) * 0.5, -1.0, 1.0)))
    np.fill_diagonal(want, 0.0)
    got = pairwise_rotation_degrees(rotations)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


def test_return_gate_is_remembered_per_track_and_read_only() -> None:
    poses = yaw_track(LOOP)
    gate = return_gate(poses, fps=FPS)
    assert return_gate(poses.copy(), fps=FPS) is gate  # the same bytes: the same gate
    assert not gate.pairs.flags.writeable and not gate.departure_profile.flags.writeable
    assert return_gate(poses, fps=FPS * 2) is not gate  # another parameter: computed
    moved = poses.copy()
    moved[-1, 0, 3] += 1e-9
    other = return_gate(moved, fps=FPS)
    assert other is not gate and other.frame_count == gate.frame_count


def test_episode_end_features_equal_pair_by_pair_embedding() -> None:
    poses = yaw_track(LOOP + LOOP[4:])  # out and back twice: later revisits reuse first frames
    track = WorldAtlasTrack()
    for i, pose in enumerate(poses):
        track.poses[i] = pose
        track.keep_frame(i, pink_texture(i % 5, 48, 64), K)
    embedder, gram = ColorHistRbf(), FilterBankGram()
    kept = keep_revisit_frames(track, len(poses), FPS, embedder, gram)
    assert kept is not None and kept.features is not None and kept.gram is not None
    assert len(kept.frames) < 2 * len(kept.pairs)  # frames are shared: the case under test
    for k, (i, j) in enumerate(kept.pairs):
        a, b = kept.frames[int(i)], kept.frames[int(j)]
        assert np.array_equal(kept.features[k], embedder.embed([a, b]).astype(np.float32))
        assert kept.gram[k] == gram.distance(a, b)

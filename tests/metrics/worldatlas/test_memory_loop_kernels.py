"""Closed-loop memory kernels (docs/methods.md#closed-loop-memory-metrics): fidelity, geometric
closure, rendering, half-life.

Scenes are synthetic and exact: a textured plane seen through two known cameras, so the
pixels of the second view are what the poses predict (up to resampling). The naive SSIM and
epipolar-distance references below are written from the formulas, loop by loop, and share
no code with the module.
"""

from __future__ import annotations

import math
from typing import Any

import cv2
import numpy as np
import pytest
from numpy.typing import NDArray

from streameval.metrics.worldatlas.closed_loop import (
    GRAM_TAU,
    geometric_closure,
    geometric_closure_pair,
    memory_half_life,
    rendering_recovery,
    revisit_fidelity,
    revisit_fidelity_pair,
    ssim,
)
from streameval.metrics.worldatlas.closed_loop_pairs import (
    fit_exponential_decay,
    fundamental_from_poses,
    relative_pose,
    symmetric_epipolar_distances,
)
from streameval.metrics.worldatlas.revisit import select_diverse_pairs
from streameval.perception.embedding import ColorHistRbf
from streameval.perception.gram import FilterBankGram

GRAM = FilterBankGram()
DESCRIPTOR = ColorHistRbf()


def gram_distance(a: NDArray[np.uint8], b: NDArray[np.uint8]) -> float:
    return GRAM.distance(a, b)


def fidelity(frames_a: list[NDArray[np.uint8]], frames_b: list[NDArray[np.uint8]]) -> Any:
    """revisit_fidelity with the CPU descriptor's features, as the engine computes them."""
    feats_a = [DESCRIPTOR.embed([a])[0] for a in frames_a]
    feats_b = [
        DESCRIPTOR.embed([cv2.resize(b, (a.shape[1], a.shape[0]))])[0]
        for a, b in zip(frames_a, frames_b, strict=True)
    ]
    return revisit_fidelity(frames_a, frames_b, feats_a, feats_b, feature_backend=DESCRIPTOR.name)


W, H, MARGIN = 320, 240, 60
K = np.array([[300.0, 0.0, W / 2], [0.0, 300.0, H / 2], [0.0, 0.0, 1.0]])
PLANE_NORMAL = np.array([0.15, -0.1, 1.0]) / np.linalg.norm([0.15, -0.1, 1.0])
PLANE_DISTANCE = 5.0  # n^T X = d in camera A's frame


def pink_texture(seed: int, h: int, w: int) -> NDArray[np.uint8]:
    """1/f colour noise: blob-rich at every scale, so SIFT finds plenty of keypoints."""
    rng = np.random.default_rng(seed)
    fy, fx = np.fft.fftfreq(h)[:, None], np.fft.fftfreq(w)[None, :]
    f = np.sqrt(fx**2 + fy**2)
    f[0, 0] = 1.0
    channels = []
    for _ in range(3):
        spectrum = (rng.normal(size=(h, w)) + 1j * rng.normal(size=(h, w))) / f
        spectrum[0, 0] = 0.0
        x = np.real(np.fft.ifft2(spectrum))
        channels.append(128.0 + 40.0 * (x - x.mean()) / x.std())
    return np.asarray(np.clip(np.stack(channels, axis=-1), 0, 255), dtype=np.uint8)


def rot_y(degrees: float) -> NDArray[np.float64]:
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_x(degrees: float) -> NDArray[np.float64]:
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def c2w(rotation: NDArray[np.float64], centre: tuple[float, float, float]) -> NDArray[np.float64]:
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = rotation, centre
    return pose


POSE_A = np.eye(4)
POSE_B = c2w(rot_y(4.0) @ rot_x(-2.0), (0.4, -0.1, 0.3))
POSE_B_ROTATION_ONLY = c2w(rot_y(5.0) @ rot_x(2.0), (0.0, 0.0, 0.0))


def render_plane_pair(
    pose_b: NDArray[np.float64], seed: int = 3
) -> tuple[NDArray[np.uint8], NDArray[np.uint8]]:
    """Camera A (identity pose) and camera B looking at one textured plane.

    The texture is the plane as A sees it, with a margin; B's image is the plane homography
    H = K (R + t n^T / d) K^-1 (X_b = R X_a + t, from inv(pose_b) since pose_a = I).
    """
    texture = pink_texture(seed, H + 2 * MARGIN, W + 2 * MARGIN)
    shift = np.array([[1.0, 0.0, -MARGIN], [0.0, 1.0, -MARGIN], [0.0, 0.0, 1.0]])
    world_to_b = np.linalg.inv(pose_b)
    r, t = world_to_b[:3, :3], world_to_b[:3, 3]
    homography = K @ (r + np.outer(t, PLANE_NORMAL) / PLANE_DISTANCE) @ np.linalg.inv(K)
    frame_a = cv2.warpPerspective(texture, shift, (W, H), flags=cv2.INTER_LINEAR)
    frame_b = cv2.warpPerspective(texture, homography @ shift, (W, H), flags=cv2.INTER_LINEAR)
    return np.asarray(frame_a), np.asarray(frame_b)


def shuffle_tiles(frame: NDArray[np.uint8], seed: int = 0) -> NDArray[np.uint8]:
    """A redrawn layout: the same texture elements in other places (4 x 4 tiles permuted)."""
    th, tw = H // 4, W // 4
    tiles = [
        frame[r * th : (r + 1) * th, c * tw : (c + 1) * tw] for r in range(4) for c in range(4)
    ]
    order = np.random.default_rng(seed).permutation(16)
    while np.any(order == np.arange(16)):
        order = np.roll(order, 1)
    rows = [np.hstack([tiles[order[r * 4 + c]] for c in range(4)]) for r in range(4)]
    return np.asarray(np.vstack(rows), dtype=np.uint8)


def relight(frame: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """Brighter and warmer: what a model that forgot the scene's lighting might draw."""
    lit = frame.astype(np.float64) * 1.2 + np.array([18.0, 6.0, -12.0])
    return np.asarray(np.clip(lit, 0, 255), dtype=np.uint8)


# ---------------------------------------------------------------- naive references


def naive_epipolar_distance(
    f: NDArray[np.float64], xa: tuple[float, float], xb: tuple[float, float]
) -> float:
    """Mean of the point-to-line distances in both images, one match at a time."""
    pa, pb = np.array([xa[0], xa[1], 1.0]), np.array([xb[0], xb[1], 1.0])
    line_b = f @ pa  # a u + b v + c = 0 in image B
    line_a = f.T @ pb
    d_b = abs(line_b @ pb) / math.sqrt(line_b[0] ** 2 + line_b[1] ** 2)
    d_a = abs(line_a @ pa) / math.sqrt(line_a[0] ** 2 + line_a[1] ** 2)
    return float(0.5 * (d_a + d_b))


def naive_ssim(a: NDArray[np.uint8], b: NDArray[np.uint8]) -> float:
    """Pixel-by-pixel Gaussian-window SSIM, reflect-101 borders, mean over channels."""
    radius, sigma = 5, 1.5
    g = np.exp(-(np.arange(-radius, radius + 1) ** 2) / (2 * sigma**2))
    weights = np.outer(g, g) / np.outer(g, g).sum()
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    per_channel = []
    for ch in range(a.shape[2]):
        x = np.pad(a[..., ch].astype(np.float64), radius, mode="reflect")  # = reflect-101
        y = np.pad(b[..., ch].astype(np.float64), radius, mode="reflect")
        total = 0.0
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                px = x[i : i + 2 * radius + 1, j : j + 2 * radius + 1]
                py = y[i : i + 2 * radius + 1, j : j + 2 * radius + 1]
                mx, my = (weights * px).sum(), (weights * py).sum()
                vx = (weights * px * px).sum() - mx * mx
                vy = (weights * py * py).sum() - my * my
                cxy = (weights * px * py).sum() - mx * my
                total += ((2 * mx * my + c1) * (2 * cxy + c2)) / (
                    (mx * mx + my * my + c1) * (vx + vy + c2)
                )
        per_channel.append(total / (a.shape[0] * a.shape[1]))
    return float(np.mean(per_channel))


# ---------------------------------------------------------------- pose convention


def test_relative_pose_is_world_to_b_times_a_to_world() -> None:
    pose_a = c2w(rot_x(10.0) @ rot_y(-30.0), (1.0, 2.0, -0.5))
    rotation, translation = relative_pose(pose_a, POSE_B)
    expected = np.linalg.inv(POSE_B) @ pose_a
    np.testing.assert_allclose(rotation, expected[:3, :3], atol=1e-12)
    np.testing.assert_allclose(translation, expected[:3, 3], atol=1e-12)


def test_fundamental_from_poses_vanishes_on_projected_points() -> None:
    """Points projected with cv2.projectPoints through both cameras lie on their epipolar
    lines; swapping the two poses (the classic convention slip) does not."""
    rng = np.random.default_rng(1)
    pose_a = c2w(rot_y(-20.0), (-0.5, 0.2, 0.0))
    pose_b = c2w(rot_y(15.0) @ rot_x(5.0), (0.8, -0.1, 0.4))
    world = rng.uniform([-3, -2, 4], [3, 2, 9], size=(60, 3))

    def project(pose: NDArray[np.float64]) -> NDArray[np.float64]:
        w2c = np.linalg.inv(pose)
        rvec, _ = cv2.Rodrigues(w2c[:3, :3])
        pixels, _ = cv2.projectPoints(world, rvec, w2c[:3, 3], K, None)
        return np.asarray(pixels, dtype=np.float64).reshape(-1, 2)

    xa, xb = project(pose_a), project(pose_b)
    f = fundamental_from_poses(pose_a, pose_b, K, K)
    naive = [naive_epipolar_distance(f, tuple(p), tuple(q)) for p, q in zip(xa, xb, strict=True)]
    assert max(naive) < 1e-6
    np.testing.assert_allclose(symmetric_epipolar_distances(f, xa, xb), naive, atol=1e-9)
    swapped = fundamental_from_poses(pose_b, pose_a, K, K)
    assert np.median(symmetric_epipolar_distances(swapped, xa, xb)) > 1.0


def test_symmetric_epipolar_distance_matches_naive_reference() -> None:
    rng = np.random.default_rng(2)
    f = rng.normal(size=(3, 3))
    xa, xb = rng.uniform(0, 300, size=(25, 2)), rng.uniform(0, 300, size=(25, 2))
    naive = [naive_epipolar_distance(f, tuple(p), tuple(q)) for p, q in zip(xa, xb, strict=True)]
    np.testing.assert_allclose(symmetric_epipolar_distances(f, xa, xb), naive, rtol=1e-10)


# ---------------------------------------------------------------- geometric closure


def test_pose_consistent_pair_closes() -> None:
    frame_a, frame_b = render_plane_pair(POSE_B)
    pair = geometric_closure_pair(frame_a, frame_b, POSE_A, POSE_B, K, K)
    assert pair is not None and pair.residual == "epipolar"
    assert pair.match_count >= 100
    assert pair.epipolar_error_pixels < 0.3
    assert pair.reprojection_error_pixels is not None and pair.reprojection_error_pixels < 0.5
    assert pair.score > 0.93


def test_redrawn_layout_falls_and_wrong_pose_falls() -> None:
    frame_a, frame_b = render_plane_pair(POSE_B)
    good = geometric_closure_pair(frame_a, frame_b, POSE_A, POSE_B, K, K)
    redrawn = geometric_closure_pair(frame_a, shuffle_tiles(frame_b), POSE_A, POSE_B, K, K)
    assert good is not None and redrawn is not None, "the redrawn tiles still match"
    assert redrawn.epipolar_error_pixels > 10.0
    assert redrawn.score < 0.3 < good.score
    # The same pixels judged against a pose the model did not take fall as well.
    other_pose = c2w(rot_y(-4.0), (-0.4, 0.3, 0.0))
    wrong = geometric_closure_pair(frame_a, frame_b, POSE_A, other_pose, K, K)
    assert wrong is not None and wrong.score < 0.5


def test_rotation_only_pair_uses_rotation_transfer() -> None:
    """Zero baseline makes F vanish; the pose's rotation homography still has to hold."""
    frame_a, frame_b = render_plane_pair(POSE_B_ROTATION_ONLY)
    pair = geometric_closure_pair(frame_a, frame_b, POSE_A, POSE_B_ROTATION_ONLY, K, K)
    assert pair is not None and pair.residual == "rotation_transfer"
    assert pair.baseline == 0.0 and pair.reprojection_error_pixels is None
    assert pair.epipolar_error_pixels < 0.3 and pair.score > 0.93
    redrawn = geometric_closure_pair(
        frame_a, shuffle_tiles(frame_b), POSE_A, POSE_B_ROTATION_ONLY, K, K
    )
    assert redrawn is not None and redrawn.score < 0.3


def test_closure_counts_pairs_without_matches_or_intrinsics() -> None:
    frame_a, frame_b = render_plane_pair(POSE_B)
    flat = np.full_like(frame_a, 127)
    result = geometric_closure(
        [frame_a, flat, frame_a],
        [frame_b, flat, frame_b],
        [POSE_A] * 3,
        [POSE_B] * 3,
        [K, K, None],
        [K, K, K],
    )
    assert result.status == "official" and result.value is not None and result.value > 0.93
    assert result.details["scored_pair_count"] == 1
    assert result.details["insufficient_match_pair_count"] == 1
    assert result.details["missing_intrinsics_pair_count"] == 1
    assert result.details["per_pair"][1] is None

    none_matched = geometric_closure([flat], [flat], [POSE_A], [POSE_B], [K], [K])
    assert none_matched.status == "not_applicable" and none_matched.value is None
    assert "SIFT matches" in (none_matched.reason or "")
    no_k = geometric_closure([frame_a], [frame_b], [POSE_A], [POSE_B], None, None)
    assert no_k.status == "not_applicable" and "intrinsics" in (no_k.reason or "")


# ---------------------------------------------------------------- rendering recovery


def test_relit_frame_lowers_rendering_recovery_but_not_closure() -> None:
    frame_a, frame_b = render_plane_pair(POSE_B)
    lit = relight(frame_b)
    clean = rendering_recovery(
        [frame_a], [frame_b], gram_distances=[gram_distance(frame_a, frame_b)], gram_backend="g"
    )
    relit = rendering_recovery(
        [frame_a], [lit], gram_distances=[gram_distance(frame_a, lit)], gram_backend="g"
    )
    assert clean.status == relit.status == "official"
    assert clean.value is not None and relit.value is not None
    assert clean.value > 0.85
    assert relit.value < clean.value - 0.3
    per_pair = relit.details["per_pair"][0]
    assert per_pair["lightness_delta"] > 5.0 and per_pair["chroma_delta"] > 3.0
    closure = geometric_closure_pair(frame_a, lit, POSE_A, POSE_B, K, K)
    assert closure is not None and closure.score > 0.9


def test_rendering_without_gram_backend_uses_two_terms() -> None:
    frame_a, frame_b = render_plane_pair(POSE_B)
    result = rendering_recovery([frame_a], [relight(frame_b)], gram_distances=None)
    pair = result.details["per_pair"][0]
    assert pair["gram_distance"] is None and result.details["gram_backend"] is None
    expected = 0.5 * (
        math.exp(-pair["lightness_delta"] / 6.0) + math.exp(-pair["chroma_delta"] / 8)
    )
    assert result.value == pytest.approx(expected, abs=1e-12)
    assert rendering_recovery([], []).status == "not_applicable"


def test_filter_bank_gram_calibration_and_identity() -> None:
    texture = pink_texture(7, 128, 128)
    assert gram_distance(texture, texture) == 0.0
    blurred = np.asarray(cv2.GaussianBlur(texture, (0, 0), 1.5), dtype=np.uint8)
    assert gram_distance(texture, blurred) == pytest.approx(GRAM_TAU, rel=0.01)
    same_statistics = gram_distance(texture, pink_texture(8, 128, 128))
    assert same_statistics < GRAM_TAU
    # per-image normalisation: lighting is the CIELAB terms' business, not the texture's
    assert gram_distance(texture, relight(texture)) < 0.05 * GRAM_TAU


# ---------------------------------------------------------------- revisit fidelity


def test_ssim_matches_naive_reference() -> None:
    rng = np.random.default_rng(4)
    a = rng.integers(0, 256, size=(14, 17, 3), dtype=np.uint8)
    b = np.clip(a.astype(int) + rng.integers(-40, 41, size=a.shape), 0, 255).astype(np.uint8)
    assert ssim(a, b) == pytest.approx(naive_ssim(a, b), abs=1e-9)
    assert ssim(a, a) == pytest.approx(1.0, abs=1e-12)
    assert ssim(a, b) < 0.97
    assert ssim(a[..., 0], b[..., 0]) == pytest.approx(naive_ssim(a[..., :1], b[..., :1]), abs=1e-9)


def test_identical_frames_have_fidelity_one() -> None:
    frame_a, frame_b = render_plane_pair(POSE_B)
    same = fidelity([frame_a, frame_b], [frame_a.copy(), frame_b.copy()])
    assert same.status == "official" and same.value == pytest.approx(1.0, abs=1e-12)
    other = fidelity([frame_a], [pink_texture(11, H, W)])
    assert other.value is not None and other.value < 0.9
    assert fidelity([], []).status == "not_applicable"


def test_fidelity_weights_and_resizing() -> None:
    frame_a, _ = render_plane_pair(POSE_B)
    half = np.asarray(cv2.resize(frame_a, (W // 2, H // 2), interpolation=cv2.INTER_AREA), np.uint8)

    pair = revisit_fidelity_pair(frame_a, half, np.array([1.0, 0.0]), np.array([0.0, 1.0]))
    assert pair.semantic == pytest.approx(0.5)
    assert 0.3 < pair.ssim < 1.0
    assert pair.score == pytest.approx(0.7 * 0.5 + 0.3 * pair.ssim, abs=1e-12)


# ---------------------------------------------------------------- memory half-life


GAPS = np.linspace(1.5, 40.0, 24)


def test_half_life_recovers_planted_decay_within_five_percent() -> None:
    rng = np.random.default_rng(5)
    for half_life, floor, noise in ((12.0, 0.3, 0.0), (8.0, 0.0, 0.0), (15.0, 0.25, 0.004)):
        tau = half_life / math.log(2.0)
        values = 0.6 * np.exp(-GAPS / tau) + floor + rng.normal(0.0, noise, GAPS.size)
        result = memory_half_life(GAPS, values)
        assert result.status == "official", result.reason
        seconds = result.details["half_life_seconds"]
        assert seconds == pytest.approx(half_life, rel=0.05)
        assert result.value == pytest.approx(seconds / 60.0)
        assert result.details["fit_r_squared"] > 0.95


def test_long_half_life_clamps_to_one() -> None:
    values = 0.8 * np.exp(-GAPS / (100.0 / math.log(2.0)))
    result = memory_half_life(GAPS, values)
    assert result.status == "official" and result.value == 1.0
    assert result.details["half_life_seconds"] == pytest.approx(100.0, rel=0.05)


def test_flat_fidelity_has_no_measurable_decay() -> None:
    result = memory_half_life(GAPS, np.full(GAPS.size, 0.8) + 0.005 * np.sin(GAPS))
    assert result.status == "not_applicable" and result.value is None
    assert result.details["reason_code"] == "no_measurable_decay"
    rising = memory_half_life(GAPS, 0.5 + 0.01 * GAPS)
    assert rising.details["reason_code"] == "no_measurable_decay"
    one_outlier = np.r_[np.ones(GAPS.size - 1), 0.8]  # one loose viewpoint match, no decay
    assert memory_half_life(GAPS, one_outlier).details["reason_code"] == "no_measurable_decay"


def test_fewer_than_five_points_is_not_applicable() -> None:
    result = memory_half_life(GAPS[:4], 0.9 * np.exp(-GAPS[:4] / 10.0))
    assert result.status == "not_applicable"
    assert result.details["reason_code"] == "insufficient_support"
    assert "at least 5" in (result.reason or "")
    nan_padded = np.r_[0.9 * np.exp(-GAPS[:4] / 10.0), [np.nan] * 3]
    assert memory_half_life(GAPS[:7], nan_padded).details["reason_code"] == "insufficient_support"


def test_noisy_decay_is_an_unreliable_fit() -> None:
    zigzag = 0.08 * (-1.0) ** np.arange(GAPS.size)
    values = 0.5 + 0.1 * np.exp(-GAPS / 5.0) + zigzag
    result = memory_half_life(GAPS, values)
    assert result.status == "not_applicable"
    assert result.details["reason_code"] == "unreliable_fit"
    with pytest.raises(ValueError, match="R\\^2"):
        fit_exponential_decay(GAPS, values)


# ---------------------------------------------------------------- pair selection


def rows(pairs: list[tuple[int, int]], fps: float, distances: list[float]) -> Any:
    """Pair rows as revisit.PAIR_COLUMNS lays them out (first, revisit, d, ., ., gap, .)."""
    return np.array(
        [
            (a, b, d, 0.0, 0.0, (b - a) / fps, 0.0)
            for (a, b), d in zip(pairs, distances, strict=True)
        ]
    )


def test_pair_selection_spreads_over_gaps_and_keeps_extremes() -> None:
    fps = 24.0
    pairs = [(i, i + 24 + 7 * k) for k, i in enumerate(range(0, 200, 2))]  # 100 candidates
    # the shortest and the longest gap are not their buckets' tightest matches: kept anyway
    distances = [0.01 * ((7 * k + 5) % 13) for k in range(len(pairs))]
    assert distances[0] > min(distances[:4]) and distances[-1] > min(distances[-4:])
    chosen = select_diverse_pairs(rows(pairs, fps, distances), max_pairs=24)
    gaps = list(chosen[:, 5])
    assert 20 <= len(chosen) <= 24
    assert gaps == sorted(gaps)
    all_gaps = [(b - a) / fps for a, b in pairs]
    assert gaps[0] == min(all_gaps) and gaps[-1] == max(all_gaps)
    span = max(all_gaps) - min(all_gaps)
    buckets = [min(int((g - min(all_gaps)) / span * 24), 23) for g in gaps]
    assert len(set(buckets)) == len(buckets), "one pair per gap bucket"
    # inside a bucket (not an end one) the tightest pose match wins
    for pair, bucket in zip(chosen[1:-1], buckets[1:-1], strict=True):
        rivals = [
            distances[k]
            for k, g in enumerate(all_gaps)
            if min(int((g - min(all_gaps)) / span * 24), 23) == bucket
        ]
        assert pair[2] == min(rivals)


def test_pair_selection_keeps_few_pairs() -> None:
    few = select_diverse_pairs(rows([(10, 40), (0, 30), (5, 100)], 10.0, [0.0] * 3), max_pairs=24)
    # sorted by gap; equal gaps keep their order of detection
    assert [(int(p[0]), int(p[1])) for p in few] == [(10, 40), (0, 30), (5, 100)]
    assert len(select_diverse_pairs(few, max_pairs=2)) == 2

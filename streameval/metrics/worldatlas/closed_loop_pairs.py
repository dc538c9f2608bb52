"""The geometry and decay fit behind the closed-loop memory metrics (WorldAtlas memory_loop).

What is computed on a revisit pair before any score: the geometry the two poses imply
(relative pose, fundamental matrix, epipolar and rotation-transfer residuals, SIFT matches,
triangulated reprojection error), and the exponential fit of fidelity against pair gap behind
``memory_half_life``. Which pairs are scored (at most 24, spread over time gaps) is
``revisit.select_diverse_pairs`` (docs/methods.md#memory_return_gate); the scores themselves
live in :mod:`closed_loop`.

Pure numpy/OpenCV; no I/O. "ref" below is the public WorldAtlas Arena closed-loop memory
module (``worldarena/benchmark/metrics``, the one defining MEMORY_LOOP_METRICS), "pairing"
its ``worldarena.benchmark.memory_pairing``; formulas were read there, the code is ours.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from streameval.core.arrays import F64
from streameval.errors import HalfLifeUnavailable

SIFT_RATIO = 0.75  # ref _sift_correspondences(ratio=0.75): Lowe's ratio test
SIFT_MAX_MATCHES = 400  # ref _sift_correspondences(max_matches=400), best distances first
MIN_SIFT_MATCHES = 12  # ref DEFAULT_MIN_SIFT_MATCHES
HALF_LIFE_MIN_POINTS = 5  # ref analyze_memory_rollout: half_life_min_points default 5
HALF_LIFE_MIN_R_SQUARED = 0.3  # ref analyze_memory_rollout: half_life_min_r_squared 0.3
HALF_LIFE_MIN_VALUE_RANGE = 0.02  # pairing fit_exponential_half_life(min_value_range=0.02)
HALF_LIFE_MAX_TAU_GAP_MULTIPLE = 10.0  # pairing fit_exponential_half_life: tau <= 10 * span
HALF_LIFE_OFFSET_STEPS = 41  # pairing fit_exponential_half_life: linspace(..., num=41), twice

FloatSequence = Sequence[float] | NDArray[np.floating[Any]]


# ---------------------------------------------------------------- pair geometry


def _grey(frame: NDArray[Any]) -> NDArray[np.uint8]:
    array = np.asarray(frame)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise ValueError(f"frames must be RGB uint8 (H, W, 3), got {array.dtype} {array.shape}")
    return np.asarray(cv2.cvtColor(array, cv2.COLOR_RGB2GRAY), dtype=np.uint8)


def relative_pose(pose_a: F64, pose_b: F64) -> tuple[F64, F64]:
    """(R, t) with X_b = R X_a + t for camera-frame points, from camera-to-world poses.

    X_w = R_a X_a + c_a and X_b = R_b^T (X_w - c_b), so R = R_b^T R_a, t = R_b^T (c_a - c_b).
    """
    pa, pb = np.asarray(pose_a, dtype=np.float64), np.asarray(pose_b, dtype=np.float64)
    rb_t = pb[:3, :3].T
    return rb_t @ pa[:3, :3], rb_t @ (pa[:3, 3] - pb[:3, 3])


def skew(v: F64) -> F64:
    """[v]x, the matrix with [v]x w = v x w."""
    x, y, z = (float(c) for c in np.asarray(v, dtype=np.float64).ravel())
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def fundamental_from_poses(pose_a: F64, pose_b: F64, k_a: F64, k_b: F64) -> F64:
    """F = K_b^-T [t]x R K_a^-1, so that x_b^T F x_a = 0 for matching pixels (homogeneous)."""
    rotation, translation = relative_pose(pose_a, pose_b)
    k_a_inv = np.linalg.inv(np.asarray(k_a, dtype=np.float64))
    k_b_inv = np.linalg.inv(np.asarray(k_b, dtype=np.float64))
    return np.asarray(k_b_inv.T @ skew(translation) @ rotation @ k_a_inv, dtype=np.float64)


def _homogeneous(points: F64) -> F64:
    return np.hstack([points, np.ones((len(points), 1))])


def symmetric_epipolar_distances(fundamental: F64, points_a: F64, points_b: F64) -> F64:
    """Per match, the mean of the pixel distances to the two epipolar lines.

    d_b = |x_b^T F x_a| / |(F x_a)_12| in image B, d_a = |x_b^T F x_a| / |(F^T x_b)_12| in
    image A; the reference averages them (0.5 * (d_a + d_b)) before its median.
    """
    ha, hb = _homogeneous(points_a), _homogeneous(points_b)
    lines_b, lines_a = ha @ fundamental.T, hb @ fundamental
    algebraic = np.abs(np.sum(hb * lines_b, axis=1))
    d_b = algebraic / np.maximum(np.linalg.norm(lines_b[:, :2], axis=1), 1e-12)
    d_a = algebraic / np.maximum(np.linalg.norm(lines_a[:, :2], axis=1), 1e-12)
    return np.asarray(0.5 * (d_a + d_b), dtype=np.float64)


def rotation_transfer_distances(
    rotation: F64, k_a: F64, k_b: F64, points_a: F64, points_b: F64
) -> F64:
    """Zero-baseline residual: symmetric transfer error of H = K_b R K_a^-1 (pixels).

    With no baseline F = K_b^-T [0]x R K_a^-1 vanishes and every match satisfies the
    epipolar constraint trivially; the poses then predict the matches exactly through H.
    """
    h = k_b @ rotation @ np.linalg.inv(k_a)

    def transfer(matrix: F64, src: F64, dst: F64) -> F64:
        mapped = _homogeneous(src) @ matrix.T
        z = np.where(np.abs(mapped[:, 2:3]) > 1e-12, mapped[:, 2:3], 1e-12)
        return np.asarray(np.linalg.norm(mapped[:, :2] / z - dst, axis=1), dtype=np.float64)

    forward = transfer(h, points_a, points_b)
    backward = transfer(np.linalg.inv(h), points_b, points_a)
    return np.asarray(0.5 * (forward + backward), dtype=np.float64)


@dataclass(frozen=True, slots=True)
class SiftFeatures:
    """One frame's SIFT keypoint positions (N, 2) and descriptors (N, 128; None when none).

    Detected once per frame: a frame shared by several revisit pairs (the square loop's 23
    pairs hold 24 distinct frames in 46 places) is not detected again for each of them.
    """

    points: F64
    descriptors: NDArray[np.float32] | None


def sift_features(frame: NDArray[np.uint8]) -> SiftFeatures:
    """OpenCV SIFT with its default parameters on the frame's grey image (as the reference).

    A new detector per call: they hold no state between images, and one detector per call
    lets frames be detected on several threads at once.
    """
    keys, descriptors = cv2.SIFT.create().detectAndCompute(_grey(frame), None)
    points = np.array([k.pt for k in keys], dtype=np.float64).reshape(-1, 2)
    return SiftFeatures(points, None if descriptors is None else np.asarray(descriptors))


def match_sift(
    features_a: SiftFeatures,
    features_b: SiftFeatures,
    *,
    ratio: float = SIFT_RATIO,
    max_matches: int = SIFT_MAX_MATCHES,
) -> tuple[F64, F64]:
    """The two frames' keypoints matched with Lowe's ratio test, best distances first."""
    empty = np.empty((0, 2), dtype=np.float64)
    desc_a, desc_b = features_a.descriptors, features_b.descriptors
    if desc_a is None or desc_b is None or len(desc_a) < 2 or len(desc_b) < 2:
        return empty, empty
    kept: list[tuple[float, int, int]] = []
    for candidates in cv2.BFMatcher(cv2.NORM_L2).knnMatch(desc_a, desc_b, k=2):
        if len(candidates) == 2 and candidates[0].distance < ratio * candidates[1].distance:
            best = candidates[0]
            kept.append((float(best.distance), int(best.queryIdx), int(best.trainIdx)))
    kept.sort(key=lambda m: m[0])
    kept = kept[: int(max_matches)]
    if not kept:
        return empty, empty
    query = np.array([q for _, q, _ in kept], dtype=np.int64)
    train = np.array([t for _, _, t in kept], dtype=np.int64)
    return features_a.points[query], features_b.points[train]


def sift_correspondences(
    frame_a: NDArray[np.uint8],
    frame_b: NDArray[np.uint8],
    *,
    ratio: float = SIFT_RATIO,
    max_matches: int = SIFT_MAX_MATCHES,
) -> tuple[F64, F64]:
    """SIFT keypoints matched with Lowe's ratio test, best descriptor distances first."""
    return match_sift(
        sift_features(frame_a), sift_features(frame_b), ratio=ratio, max_matches=max_matches
    )


def reprojection_error(
    points_a: F64, points_b: F64, pose_a: F64, pose_b: F64, k_a: F64, k_b: F64
) -> float | None:
    """Triangulate the matches with the pose cameras; mean over views of median pixel error.

    None when fewer than MIN_SIFT_MATCHES points triangulate to finite positions.
    """
    proj_a = k_a @ np.linalg.inv(pose_a)[:3, :4]
    proj_b = k_b @ np.linalg.inv(pose_b)[:3, :4]
    points_h = np.asarray(cv2.triangulatePoints(proj_a, proj_b, points_a.T, points_b.T))
    valid = np.abs(points_h[3]) > 1e-9
    if int(np.count_nonzero(valid)) < MIN_SIFT_MATCHES:
        return None
    world = _homogeneous((points_h[:3, valid] / points_h[3, valid]).T)
    errors = []
    for projection, observed in ((proj_a, points_a[valid]), (proj_b, points_b[valid])):
        pixels_h = world @ projection.T
        z = pixels_h[:, 2:3]
        z = np.where(np.abs(z) > 1e-9, z, 1e-9)
        errors.append(float(np.median(np.linalg.norm(pixels_h[:, :2] / z - observed, axis=1))))
    return float(np.mean(errors))


# ---------------------------------------------------------------- decay over pair gaps


@dataclass(frozen=True, slots=True)
class ExponentialFit:
    """f(gap) = amplitude * exp(-gap / tau) + offset, least squares in log space."""

    amplitude: float
    offset: float
    tau_seconds: float
    half_life_seconds: float
    r_squared: float
    point_count: int


def fit_exponential_decay(
    gaps_seconds: FloatSequence,
    values: FloatSequence,
    *,
    min_points: int = HALF_LIFE_MIN_POINTS,
    min_r_squared: float = HALF_LIFE_MIN_R_SQUARED,
    min_value_range: float = HALF_LIFE_MIN_VALUE_RANGE,
    max_tau_gap_multiple: float = HALF_LIFE_MAX_TAU_GAP_MULTIPLE,
) -> ExponentialFit:
    """Fit a decaying exponential with a floor; raise :class:`HalfLifeUnavailable` if none.

    With the floor b fixed, log(f - b) is linear in the gap and solved in closed form, so b
    is swept (a coarse grid on [0, min f), then a fine one around the best) and the fit
    with the best R^2 (computed on f itself) is kept: no nonlinear solver to diverge on a
    few noisy points. Fits that rise (lambda <= 0) or whose tau exceeds 10x the observed gap
    span (decay not resolvable in the window) are not decays. Flat data (range < 0.02)
    shows no measurable decay; R^2 below 0.3 is an unreliable fit.
    """
    gaps = np.asarray(gaps_seconds, dtype=np.float64).ravel()
    scores = np.asarray(values, dtype=np.float64).ravel()
    if gaps.shape != scores.shape:
        raise ValueError(f"{gaps.size} gaps for {scores.size} values")
    finite = np.isfinite(gaps) & np.isfinite(scores)
    gaps, scores = gaps[finite], scores[finite]
    if len(gaps) < int(min_points):
        raise HalfLifeUnavailable(
            "insufficient_support", f"needs at least {min_points} revisit pairs, got {len(gaps)}"
        )
    span = float(np.ptp(gaps))
    if span <= 0.0:
        raise HalfLifeUnavailable("insufficient_support", "all revisit pairs share one time gap")
    total = float(np.sum((scores - scores.mean()) ** 2))
    if float(np.ptp(scores)) < float(min_value_range) or total <= 1e-12:
        raise HalfLifeUnavailable(
            "no_measurable_decay",
            f"fidelity varies by less than {min_value_range} over the gaps: no measurable decay",
        )
    # Ours (docs/methods.md#memory_half_life): the longer-gap half of the pairs must be less
    # faithful than the shorter-gap half, by medians, so that one pair drawn from a looser
    # viewpoint match (up to 27 degrees off within the gate's tau) is not fitted as a decay.
    order = np.argsort(gaps, kind="stable")
    half = len(order) // 2
    drop = float(np.median(scores[order[:half]]) - np.median(scores[order[-half:]]))
    if drop < float(min_value_range):
        raise HalfLifeUnavailable(
            "no_measurable_decay",
            f"the longer-gap half of the pairs is not less faithful than the shorter-gap half "
            f"(median drop {drop:.4f} < {min_value_range}): no measurable decay",
        )

    def fit_at(offset: float) -> ExponentialFit | None:
        lifted = scores - offset
        if float(lifted.min()) <= 1e-9:
            return None
        slope, intercept = np.polyfit(gaps, np.log(lifted), 1)
        if slope >= 0.0:
            return None
        tau = -1.0 / float(slope)
        if tau > max_tau_gap_multiple * span:
            return None
        amplitude = float(np.exp(intercept))
        residual = float(np.sum((scores - amplitude * np.exp(-gaps / tau) - offset) ** 2))
        return ExponentialFit(
            amplitude, offset, tau, tau * math.log(2.0), 1.0 - residual / total, len(gaps)
        )

    def sweep(low: float, high: float, best: ExponentialFit | None) -> ExponentialFit | None:
        for offset in np.linspace(low, high, HALF_LIFE_OFFSET_STEPS):
            candidate = fit_at(float(offset))
            if candidate is not None and (best is None or candidate.r_squared > best.r_squared):
                best = candidate
        return best

    ceiling = max(float(scores.min()) - 1e-6, 0.0)
    best = sweep(0.0, ceiling, None)
    if best is None:
        raise HalfLifeUnavailable(
            "no_measurable_decay", "fidelity does not decay with the time gap (lambda <= 0)"
        )
    step = ceiling / (HALF_LIFE_OFFSET_STEPS - 1)
    best = sweep(max(best.offset - step, 0.0), min(best.offset + step, ceiling), best)
    assert best is not None
    if best.r_squared < float(min_r_squared):
        raise HalfLifeUnavailable(
            "unreliable_fit", f"exponential fit R^2 {best.r_squared:.3f} < {min_r_squared}"
        )
    return best


__all__ = [
    "ExponentialFit",
    "FloatSequence",
    "HalfLifeUnavailable",
    "SiftFeatures",
    "fit_exponential_decay",
    "fundamental_from_poses",
    "match_sift",
    "relative_pose",
    "reprojection_error",
    "rotation_transfer_distances",
    "sift_correspondences",
    "sift_features",
    "skew",
    "symmetric_epipolar_distances",
]

"""Closed-loop memory kernels of WorldAtlas memory_loop: fidelity, closure, rendering, half-life.

Every score is self-referential: the reference for a revisit frame is the frame the model
itself drew earlier at the same estimated viewpoint, so no ground-truth long video is needed.
Pairs come from the estimated pose track (docs/methods.md#memory_return_gate).

- ``memory_revisit_fidelity``: does the revisit look like the first visit?
  0.7 * (cos + 1) / 2 + 0.3 * SSIM per pair, mean over pairs.
- ``memory_geometric_closure``: do the revisit pixels obey the geometry the poses imply?
  SIFT matches against a fundamental matrix *derived from the poses*, not fitted to them.
- ``memory_rendering_recovery``: is the scene lit and textured as before (CIELAB, Gram)?
- ``memory_half_life``: how long fidelity survives, from an exponential fit over time gaps.

Statuses (docs/methods.md#statuses): official when inputs and backend exist; otherwise
not_applicable with the reason, never an imputed zero. Frames are RGB ``uint8`` (H, W, 3);
poses camera-to-world 4x4 (OpenCV camera axes: x right, y down, z forward); intrinsics 3x3
pixel matrices. No I/O here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import cv2
import numpy as np
from numpy.typing import NDArray

from streameval.core.arrays import F64, Image
from streameval.core.parallel import thread_map
from streameval.errors import HalfLifeUnavailable
from streameval.metrics.worldatlas.closed_loop_pairs import (
    HALF_LIFE_MIN_POINTS,
    HALF_LIFE_MIN_R_SQUARED,
    MIN_SIFT_MATCHES,
    FloatSequence,
    SiftFeatures,
    fit_exponential_decay,
    fundamental_from_poses,
    match_sift,
    relative_pose,
    reprojection_error,
    rotation_transfer_distances,
    sift_features,
    symmetric_epipolar_distances,
)
from streameval.metrics.worldatlas.constants import MEMORY_LOOP_SECONDS

# --- constants; "ref" = WorldAtlas Arena ``worldarena/benchmark/metrics`` closed-loop memory
# module (the one defining MEMORY_LOOP_METRICS). SIFT and half-life-fit constants live in
# closed_loop_pairs, next to the code that uses them.
FIDELITY_SEMANTIC_WEIGHT = 0.7  # ref _fidelity_scores: 0.7 * semantic + 0.3 * structural
FIDELITY_STRUCTURAL_WEIGHT = 0.3  # ref _fidelity_scores
SSIM_WINDOW = 11  # ref (legacy._ssim_channel): cv2.GaussianBlur(x, (11, 11), 1.5)
SSIM_SIGMA = 1.5  # ref (legacy._ssim_channel)
SSIM_K1, SSIM_K2, SSIM_DATA_RANGE = 0.01, 0.03, 255.0  # ref (legacy): c = (K * 255) ** 2
EPIPOLAR_TAU_PIXELS = 4.0  # ref DEFAULT_EPIPOLAR_TAU_PIXELS
REPROJECTION_TAU_PIXELS = 8.0  # ref DEFAULT_REPROJECTION_TAU_PIXELS
MIN_BASELINE = 1e-6  # ref geometric_closure_for_pair: triangulate only if |t| > 1e-6
LIGHTNESS_TAU = 6.0  # ref DEFAULT_LIGHTNESS_TAU (CIELAB L* units, 0..100)
CHROMA_TAU = 8.0  # ref DEFAULT_CHROMA_TAU (CIELAB a*b* units)
GRAM_TAU = 0.002  # ref DEFAULT_GRAM_TAU (VGG Gram distance units)
HALF_LIFE_REFERENCE_SECONDS = MEMORY_LOOP_SECONDS  # ref DEFAULT_HALF_LIFE_REFERENCE_SECONDS=60

Status = Literal["official", "not_applicable"]
Feature = NDArray[np.floating[Any]]


@dataclass(frozen=True, slots=True)
class ClosedLoopResult:
    """One metric's outcome, for the integrator to map onto the project's MetricResult."""

    value: float | None
    status: Status
    reason: str | None
    details: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def official(value: float, details: dict[str, Any]) -> ClosedLoopResult:
        return ClosedLoopResult(float(value), "official", None, details)

    @staticmethod
    def not_applicable(reason: str, details: dict[str, Any]) -> ClosedLoopResult:
        return ClosedLoopResult(None, "not_applicable", reason, details)


def _clamp01(value: float) -> float:
    return 0.0 if value < 0.0 else 1.0 if value > 1.0 else float(value)


def _rgb(frame: NDArray[Any], name: str = "frame") -> Image:
    """Refuse what is not an RGB uint8 image rather than guess its range."""
    array = np.asarray(frame)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise ValueError(f"{name} must be RGB uint8 (H, W, 3), got {array.dtype} {array.shape}")
    return array


def resize_like(frame: Image, target: Image) -> Image:
    """The second frame of a pair at the first one's size (bicubic, as the reference does)."""
    if frame.shape[:2] == target.shape[:2]:
        return frame
    resized = cv2.resize(frame, (target.shape[1], target.shape[0]), interpolation=cv2.INTER_CUBIC)
    return np.asarray(resized, dtype=np.uint8)


def _check_pairs(frames_a: Sequence[Image], frames_b: Sequence[Image]) -> None:
    if len(frames_a) != len(frames_b):
        raise ValueError(f"{len(frames_a)} first frames for {len(frames_b)} revisit frames")


# ---------------------------------------------------------------- revisit fidelity


def ssim(image_a: NDArray[Any], image_b: NDArray[Any]) -> float:
    """Gaussian-window SSIM (11x11, sigma 1.5, K1 0.01, K2 0.03, L 255), in [0, 1].

    As the reference (not skimage's default 7x7 uniform window with cropped borders): the
    SSIM map covers every pixel (OpenCV's reflect-101 border), is averaged, per channel for
    RGB then over channels, and clamped to [0, 1]. A 2-D array is one grey channel.
    """
    a = np.asarray(image_a, dtype=np.float64)
    b = np.asarray(image_b, dtype=np.float64)
    if a.shape != b.shape or a.ndim not in (2, 3):
        raise ValueError(f"SSIM needs two images of one shape, got {a.shape} and {b.shape}")
    if a.ndim == 2:
        a, b = a[..., None], b[..., None]
    c1 = (SSIM_K1 * SSIM_DATA_RANGE) ** 2
    c2 = (SSIM_K2 * SSIM_DATA_RANGE) ** 2
    window = (SSIM_WINDOW, SSIM_WINDOW)

    def blur(x: F64) -> F64:
        return np.asarray(cv2.GaussianBlur(x, window, SSIM_SIGMA), dtype=np.float64)

    scores = []
    for c in range(a.shape[2]):
        x, y = np.ascontiguousarray(a[..., c]), np.ascontiguousarray(b[..., c])
        mx, my = blur(x), blur(y)
        vx, vy, cxy = blur(x * x) - mx * mx, blur(y * y) - my * my, blur(x * y) - mx * my
        numerator = (2.0 * mx * my + c1) * (2.0 * cxy + c2)
        denominator = (mx * mx + my * my + c1) * (vx + vy + c2)
        scores.append(float(np.mean(numerator / np.maximum(denominator, 1e-12))))
    return _clamp01(float(np.mean(scores)))


@dataclass(frozen=True, slots=True)
class FidelityPair:
    semantic: float  # (cos + 1) / 2
    ssim: float
    score: float


def revisit_fidelity_pair(
    frame_a: Image, frame_b: Image, feature_a: Feature, feature_b: Feature
) -> FidelityPair:
    """One pair's fidelity; the revisit frame is resized to the first before SSIM.

    The features are the appearance backend's vectors of the two frames (the revisit frame
    resized to the first), computed once at episode end and kept in the cache, so that the
    score does not depend on re-running a network (docs/methods.md#memory_revisit_fidelity).
    """
    a = _rgb(frame_a, "first frame")
    b = resize_like(_rgb(frame_b, "revisit frame"), a)
    fa = np.asarray(feature_a, dtype=np.float64).ravel()
    fb = np.asarray(feature_b, dtype=np.float64).ravel()
    if fa.shape != fb.shape or not (np.isfinite(fa).all() and np.isfinite(fb).all()):
        raise ValueError("the two features of a pair are mismatched or non-finite")
    norm = float(np.linalg.norm(fa) * np.linalg.norm(fb))
    cosine = float(np.dot(fa, fb)) / norm if norm > 0.0 else 0.0
    semantic = _clamp01((cosine + 1.0) / 2.0)
    structural = ssim(a, b)
    score = FIDELITY_SEMANTIC_WEIGHT * semantic + FIDELITY_STRUCTURAL_WEIGHT * structural
    return FidelityPair(semantic, structural, _clamp01(score))


def revisit_fidelity(
    frames_a: Sequence[Image],
    frames_b: Sequence[Image],
    features_a: Sequence[Feature],
    features_b: Sequence[Feature],
    *,
    feature_backend: str,
) -> ClosedLoopResult:
    """``memory_revisit_fidelity``: the mean pair fidelity (per-pair values in details)."""
    _check_pairs(frames_a, frames_b)
    if not (len(features_a) == len(features_b) == len(frames_a)):
        raise ValueError("one feature per frame of every pair is needed")
    details: dict[str, Any] = {"feature_backend": feature_backend, "scored_pair_count": 0}
    if not frames_a:
        return ClosedLoopResult.not_applicable("no revisit pair to score", details)
    # SSIM is OpenCV blurs and numpy arithmetic (the GIL released): pairs on a few threads
    inputs = list(zip(frames_a, frames_b, features_a, features_b, strict=True))
    pairs = thread_map(lambda pair: revisit_fidelity_pair(*pair), inputs)
    details.update(scored_pair_count=len(pairs), per_pair=[asdict(p) for p in pairs])
    return ClosedLoopResult.official(float(np.mean([p.score for p in pairs])), details)


# ---------------------------------------------------------------- geometric closure


@dataclass(frozen=True, slots=True)
class ClosurePair:
    score: float
    epipolar_error_pixels: float  # or the rotation-transfer error when the baseline is zero
    epipolar_score: float
    reprojection_error_pixels: float | None
    reprojection_score: float | None
    match_count: int
    baseline: float
    residual: Literal["epipolar", "rotation_transfer"]


def geometric_closure_pair(
    frame_a: Image,
    frame_b: Image,
    pose_a: F64,
    pose_b: F64,
    k_a: F64,
    k_b: F64,
    *,
    min_matches: int = MIN_SIFT_MATCHES,
    features: tuple[SiftFeatures, SiftFeatures] | None = None,
) -> ClosurePair | None:
    """Closure of one pair, or None when it has fewer than ``min_matches`` SIFT matches.

    The fundamental matrix comes from the poses, so a redrawn layout (plausible pixels in
    the wrong places) violates it even when the frames look alike. ``features``: the two
    frames' SIFT features when already detected (:func:`geometric_closure` detects each
    distinct frame once); without them they are detected here.
    """
    pose_a, pose_b = np.asarray(pose_a, np.float64), np.asarray(pose_b, np.float64)
    k_a, k_b = np.asarray(k_a, np.float64), np.asarray(k_b, np.float64)
    if features is None:
        features = (sift_features(frame_a), sift_features(frame_b))
    points_a, points_b = match_sift(*features)
    if len(points_a) < int(min_matches):
        return None
    rotation, translation = relative_pose(pose_a, pose_b)
    baseline = float(np.linalg.norm(translation))
    reprojection: float | None = None
    if baseline > MIN_BASELINE:
        residual: Literal["epipolar", "rotation_transfer"] = "epipolar"
        fundamental = fundamental_from_poses(pose_a, pose_b, k_a, k_b)
        epipolar = float(np.median(symmetric_epipolar_distances(fundamental, points_a, points_b)))
        reprojection = reprojection_error(points_a, points_b, pose_a, pose_b, k_a, k_b)
    else:
        residual = "rotation_transfer"
        epipolar = float(
            np.median(rotation_transfer_distances(rotation, k_a, k_b, points_a, points_b))
        )
    epipolar_score = _clamp01(math.exp(-epipolar / EPIPOLAR_TAU_PIXELS))
    reprojection_score = (
        None
        if reprojection is None
        else _clamp01(math.exp(-reprojection / REPROJECTION_TAU_PIXELS))
    )
    score = (
        epipolar_score
        if reprojection_score is None
        else 0.5 * (epipolar_score + reprojection_score)
    )
    return ClosurePair(
        score=_clamp01(score),
        epipolar_error_pixels=epipolar,
        epipolar_score=epipolar_score,
        reprojection_error_pixels=reprojection,
        reprojection_score=reprojection_score,
        match_count=len(points_a),
        baseline=baseline,
        residual=residual,
    )


def _usable_intrinsics(k: F64 | None) -> bool:
    """A finite, invertible 3x3 pixel matrix; None (the source sent none) is not usable."""
    if k is None:
        return False
    m = np.asarray(k, dtype=np.float64)
    return m.shape == (3, 3) and bool(np.isfinite(m).all()) and abs(np.linalg.det(m)) > 1e-12


def geometric_closure(
    frames_a: Sequence[Image],
    frames_b: Sequence[Image],
    poses_a: Sequence[F64],
    poses_b: Sequence[F64],
    intrinsics_a: Sequence[F64 | None] | None,
    intrinsics_b: Sequence[F64 | None] | None,
    *,
    min_matches: int = MIN_SIFT_MATCHES,
) -> ClosedLoopResult:
    """``memory_geometric_closure``: mean closure over pairs with intrinsics and matches.

    Pairs without usable intrinsics or with too few matches are left out of the mean and
    counted in details; with none left the metric is not applicable.
    """
    _check_pairs(frames_a, frames_b)
    n = len(frames_a)
    if not (len(poses_a) == len(poses_b) == n):
        raise ValueError("one pose per frame of every pair is needed")
    ks_a = list(intrinsics_a) if intrinsics_a is not None else [None] * n
    ks_b = list(intrinsics_b) if intrinsics_b is not None else [None] * n
    if not (len(ks_a) == len(ks_b) == n):
        raise ValueError("intrinsics must be None or one (or None) per frame of every pair")
    usable = [
        k
        for k in range(n)
        if _usable_intrinsics(ks_a[k]) and _usable_intrinsics(ks_b[k])  # None: not usable
    ]
    # SIFT once per distinct frame (pairs share frames: the same array object), the frames and
    # then the pairs on a few threads; results in order, so bit for bit the serial loop.
    distinct: dict[int, Image] = {}
    for k in usable:
        for frame in (frames_a[k], frames_b[k]):
            distinct.setdefault(id(frame), frame)
    detected = dict(zip(distinct, thread_map(sift_features, list(distinct.values())), strict=True))

    def closure(k: int) -> ClosurePair | None:
        ka, kb = ks_a[k], ks_b[k]
        assert ka is not None and kb is not None  # usable
        features = (detected[id(frames_a[k])], detected[id(frames_b[k])])
        return geometric_closure_pair(
            frames_a[k],
            frames_b[k],
            poses_a[k],
            poses_b[k],
            ka,
            kb,
            min_matches=min_matches,
            features=features,
        )

    closed = dict(zip(usable, thread_map(closure, usable), strict=True))
    per_pair: list[dict[str, Any] | None] = []
    for k in range(n):
        pair = closed.get(k)
        per_pair.append(None if pair is None else asdict(pair))
    missing_intrinsics = n - len(usable)
    too_few_matches = sum(1 for k in usable if closed[k] is None)
    scores = [p["score"] for p in per_pair if p is not None]
    details: dict[str, Any] = {
        "scored_pair_count": len(scores),
        "candidate_pair_count": n,
        "insufficient_match_pair_count": too_few_matches,
        "missing_intrinsics_pair_count": missing_intrinsics,
        "min_sift_matches": int(min_matches),
        "per_pair": per_pair,
    }
    if not scores:
        if n == 0:
            reason = "no revisit pair to score"
        elif missing_intrinsics == n:
            reason = "no revisit pair has usable intrinsics"
        else:
            reason = f"no revisit pair with intrinsics has at least {min_matches} SIFT matches"
        return ClosedLoopResult.not_applicable(reason, details)
    return ClosedLoopResult.official(float(np.mean(scores)), details)


# ---------------------------------------------------------------- rendering recovery


def lab_means(frame: Image) -> tuple[float, float, float]:
    """Spatial means of CIELAB L* (0..100), a*, b* (about -128..127) of an RGB frame."""
    lab = np.asarray(cv2.cvtColor(_rgb(frame), cv2.COLOR_RGB2LAB), dtype=np.float64)
    means = lab.reshape(-1, 3).mean(axis=0)
    return float(means[0] * 100.0 / 255.0), float(means[1] - 128.0), float(means[2] - 128.0)


@dataclass(frozen=True, slots=True)
class RenderingPair:
    score: float
    lightness_delta: float
    chroma_delta: float
    lighting_score: float
    chroma_score: float
    gram_distance: float | None
    texture_score: float | None


LabMeans = Callable[[Image], tuple[float, float, float]]


def _memo_lab_means() -> LabMeans:
    """:func:`lab_means` computed once per distinct frame (array object) of a metric call:
    pairs share frames. The entry keeps its frame alive, so no other array can reuse its id."""
    memo: dict[int, tuple[Image, tuple[float, float, float]]] = {}

    def means(frame: Image) -> tuple[float, float, float]:
        hit = memo.get(id(frame))
        if hit is None:
            hit = memo[id(frame)] = (frame, lab_means(frame))
        return hit[1]

    return means


def rendering_recovery_pair(
    frame_a: Image,
    frame_b: Image,
    gram_distance: float | None = None,
    *,
    means: LabMeans = lab_means,
) -> RenderingPair:
    """exp(-dL/6), exp(-dab/8) and exp(-g/0.002) for one pair; the mean of what exists.

    Spatial means discard layout, so the first two terms read illumination, not content;
    ``gram_distance`` is the Gram backend's texture distance of the pair (None: no backend).
    ``means``: :func:`lab_means`, or a memo of it shared by the pairs of one episode.
    """
    a = _rgb(frame_a, "first frame")
    b = resize_like(_rgb(frame_b, "revisit frame"), a)
    la, aa, ba = means(a)
    lb, ab, bb = means(b)
    d_l = abs(la - lb)
    d_ab = math.hypot(aa - ab, ba - bb)
    lighting = _clamp01(math.exp(-d_l / LIGHTNESS_TAU))
    chroma = _clamp01(math.exp(-d_ab / CHROMA_TAU))
    if gram_distance is None:
        two_terms = _clamp01(0.5 * (lighting + chroma))
        return RenderingPair(two_terms, d_l, d_ab, lighting, chroma, None, None)
    g = float(gram_distance)
    if not math.isfinite(g) or g < 0.0:
        raise ValueError(f"the Gram backend returned {g}; a distance must be finite and >= 0")
    texture = _clamp01(math.exp(-g / GRAM_TAU))
    score = _clamp01((lighting + chroma + texture) / 3.0)
    return RenderingPair(score, d_l, d_ab, lighting, chroma, g, texture)


def rendering_recovery(
    frames_a: Sequence[Image],
    frames_b: Sequence[Image],
    *,
    gram_distances: Sequence[float] | None = None,
    gram_backend: str | None = None,
) -> ClosedLoopResult:
    """``memory_rendering_recovery``: mean over pairs; without a Gram backend, two terms."""
    _check_pairs(frames_a, frames_b)
    if gram_distances is not None and len(gram_distances) != len(frames_a):
        raise ValueError(f"{len(gram_distances)} Gram distances for {len(frames_a)} pairs")
    details: dict[str, Any] = {
        "gram_backend": gram_backend if gram_distances is not None else None,
        "scored_pair_count": 0,
    }
    if not frames_a:
        return ClosedLoopResult.not_applicable("no revisit pair to score", details)
    grams: Sequence[float | None] = (
        gram_distances if gram_distances is not None else [None] * len(frames_a)
    )
    means = _memo_lab_means()
    pairs = [
        rendering_recovery_pair(a, b, g, means=means)
        for a, b, g in zip(frames_a, frames_b, grams, strict=True)
    ]
    details.update(scored_pair_count=len(pairs), per_pair=[asdict(p) for p in pairs])
    return ClosedLoopResult.official(float(np.mean([p.score for p in pairs])), details)


# ---------------------------------------------------------------- memory half-life


def memory_half_life(
    gaps_seconds: FloatSequence,
    fidelities: FloatSequence,
    *,
    reference_seconds: float = HALF_LIFE_REFERENCE_SECONDS,
    min_points: int = HALF_LIFE_MIN_POINTS,
    min_r_squared: float = HALF_LIFE_MIN_R_SQUARED,
) -> ClosedLoopResult:
    """``memory_half_life``: half-life / 60 s clamped to [0, 1]; seconds in details.

    Only a reliable fit is official (docs/methods.md#memory_half_life); too little support,
    no measurable decay or an unreliable fit is not_applicable with the reason
    (``reason_code`` in details).
    """
    details: dict[str, Any] = {
        "half_life_reference_seconds": float(reference_seconds),
        "fit_model": "a*exp(-gap/tau)+b",
    }
    try:
        fit = fit_exponential_decay(
            gaps_seconds, fidelities, min_points=min_points, min_r_squared=min_r_squared
        )
    except HalfLifeUnavailable as exc:
        details["reason_code"] = exc.code
        return ClosedLoopResult.not_applicable(str(exc), details)
    details.update(
        half_life_seconds=fit.half_life_seconds,
        tau_seconds=fit.tau_seconds,
        amplitude=fit.amplitude,
        offset=fit.offset,
        fit_r_squared=fit.r_squared,
        fit_point_count=fit.point_count,
    )
    raw = _clamp01(fit.half_life_seconds / max(float(reference_seconds), 1e-6))
    return ClosedLoopResult.official(raw, details)


__all__ = [
    "ClosedLoopResult",
    "ClosurePair",
    "FidelityPair",
    "RenderingPair",
    "geometric_closure",
    "geometric_closure_pair",
    "lab_means",
    "memory_half_life",
    "rendering_recovery",
    "rendering_recovery_pair",
    "resize_like",
    "revisit_fidelity",
    "revisit_fidelity_pair",
    "ssim",
]

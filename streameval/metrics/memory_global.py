"""Global Memory of seed 000 (SPEC §5): is the whole trajectory geometrically consistent?

One reconstruction (pose + depth per view) over frames 1 s apart. For every ordered pair of
views (a, b), a's confident points are back-projected to the world, projected into b, and the
co-visible ones (inside b, in front of it, depth ratio in (0.7, 1.4)) are compared with b's own
back-projected point at the projected sub-pixel location (b's depth interpolated there);
``error = ‖X_a − X_b‖ / median depth of a``. The episode's ``e`` is the median of all errors
pooled over the pairs with ≥ 5 co-visible points; ``normalized = 100 / (1 + e / TAU_G)``,
TAU_G = 0.05 (lower e is raw-better).

Decisions (where SPEC §5 and seed 000 leave room):

- **Views** (``select_views``, in ``streameval.fits.geometry``: the pipeline plans with it):
  ``k = clip(floor((n_frames − 1)/fps) + 1, 6, 64)`` — the number of whole seconds the clip
  spans, one view per second — capped at ``n_frames``; the frames are
  ``round_half_up(linspace(0, n_frames − 1, k))`` (integer arithmetic, so exact), i.e. spread
  over the whole clip, first and last frame included, about 1 s apart.
- **Camera model.** ``pose`` is camera-to-world (4×4, OpenCV axes: x right, y down, z forward);
  ``intrinsics`` are pinhole (last row 0 0 1) for the depth map's resolution; pixel (x, y) has its
  centre at image coordinate (x, y); ``depth`` is the z-depth along the optical axis.
- **Confident pixels** = the confidence mask (all pixels when None) ∩ finite ∩ depth > 0. A view
  is *bad* (→ not_applicable naming it) when its pose or intrinsics have a non-finite entry or its
  depth is non-finite at a pixel the mask calls confident; zero/negative depth just isn't
  confident.
- **Subsample.** At most ``max_points`` (default ``GLOBAL_POINTS_PER_VIEW`` = 4096) source points
  per view, evenly spread over the confident pixels in row-major order
  (``flat[(k · n) // max_points]``) — deterministic, no RNG. Measured on 2 CPU cores, 64 views of
  294×518: ≈ 0.4 s with about half the 4032 ordered pairs co-visible, ≈ 0.85 s when all are
  (12–13.6 M pooled errors); the bilinear lookup below costs ≈ 5 % over a nearest-pixel one.
- **Target location.** The projection (u, v) is kept at sub-pixel precision and must lie inside
  b (0 ≤ u ≤ w − 1, 0 ≤ v ≤ h − 1); b's depth there is the **bilinear interpolation of b's
  inverse depth** over the 2×2 pixels around (u, v) (on the last column/row, the cell before
  it), and all four must be confident in b, otherwise the point is skipped (an edge next to sky
  or a masked pixel is not half-trusted). ``X_b`` is b's back-projection of (u, v) at that
  depth: on the same ray as ``X_a``, so ``‖X_a − X_b‖ = |1 − d_b/z| · ‖X_a − C_b‖`` with z the
  projected z-depth and C_b b's centre. Why interpolate: rounding to the nearest pixel left a
  quantisation floor that grows with the depth gradient — on the procedural world's ground
  (160×108 depth, eye 1 m, views 1 s apart) e ≈ 0.003–0.009 (score 85–94) turning or
  strafing and e ≈ 0.12 (score 30) walking forward, where the ground reaches the horizon at
  grazing angles, for a perfectly consistent scene. Why *inverse* depth: on any plane 1/z is
  affine in the pixel coordinates, so the interpolation is exact on planar surfaces (the same
  clips: e ≈ 1e-7, float32 rounding); bilinear z is only first-order (e ≈ 0.017 walking forward).
  Edges between two surfaces still interpolate across the jump: those points either fail the
  ratio test or carry a large error, as any lookup at a discontinuity would.
- **Depth ratio** = projected z in b / b's interpolated depth, open interval (0.7, 1.4).
- **Normaliser** = the median depth over *all* confident pixels of the source view a (not just
  the subsample), so the error is scale-free per source view.
- **Pairs** with fewer than 5 co-visible points are skipped (their points do not enter the
  median). The details carry, per view, its pairs kept as source and the *mean* error of its
  points (a per-view median would cost a second pass over millions of errors).
- **Diagnostics, not the score.** The details also carry ``mean_error`` (mean of the pool) and
  ``share_over_tau_g`` (share of pooled errors > TAU_G), because the median is blind to a
  minority of inconsistent points: with exact geometry (pose + depth sent by the model) every
  consistent point has error 0, so ``e`` stays ≈ 0 until more than half the pooled co-visible
  points disagree. Measured on the procedural world (AD 20 s/key, 40 views): points whose
  ground slab or object was regenerated between the two views are 21 % of the pool even when
  every such point is counted, so the ``forget`` defect leaves ``e`` at 0 (score 100) while
  ``share_over_tau_g`` rises from 2.1 % to 3.3 % (R 80 s then L 80 s: 0.7 % → 3.8 %). The clean
  world's share is the points whose 2×2 lookup straddles a depth edge.
- **Statuses.** Fewer than 2 usable views (a view with no confident pixel is unusable) or no
  pair kept → not_applicable with the reason; ``views is None`` (no reconstruction backend, no
  pose + depth from the model or a sidecar) → not_applicable, never a made-up number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from streameval.constants import (
    COVIS_DEPTH_RATIO,
    COVIS_MIN_POINTS,
    GLOBAL_POINTS_PER_VIEW,
    TAU_G,
)
from streameval.metrics.arc import FloatArray, json_float
from streameval.results import MetricResult

PERCENT = 100.0
METRIC_NAME = "global_memory"
REASON_NO_BACKEND = "no reconstruction backend and no pose + depth from the model or a sidecar"


@dataclass(frozen=True, slots=True)
class GlobalView:
    """One reconstructed view: frame index, camera-to-world pose (4×4), depth map (h, w),
    pinhole intrinsics (3×3) for the depth map's resolution, optional confidence mask (h, w)."""

    frame: int
    pose: ArrayLike
    depth: ArrayLike
    intrinsics: ArrayLike
    confidence: ArrayLike | None = None


@dataclass(frozen=True, slots=True)
class _Cloud:
    """A view prepared for co-visibility: world points of its (subsampled) confident pixels."""

    frame: int
    c2w: FloatArray  # 3x4
    w2c: FloatArray  # 3x4
    k: FloatArray
    k_inv: FloatArray
    shape: tuple[int, int]
    inv_depth_or_nan: FloatArray  # flat (h·w): 1 / depth where confident, NaN elsewhere
    world: FloatArray  # (P, 3)
    median_depth: float
    n_confident: int


class BadViewError(ValueError):
    """A view whose pose, intrinsics or confident depth is not finite."""


def _as(x: ArrayLike, shape: tuple[int, ...] | None, what: str, frame: int) -> FloatArray:
    a = np.array(x, dtype=np.float64)
    if (shape is not None and a.shape != shape) or (shape is None and a.ndim != 2):
        want = "(h, w)" if shape is None else str(shape)
        raise ValueError(f"view at frame {frame}: {what} must have shape {want}, got {a.shape}")
    return a


def _prepare(view: GlobalView, max_points: int) -> _Cloud:
    frame = int(view.frame)
    pose = _as(view.pose, (4, 4), "pose", frame)
    k = _as(view.intrinsics, (3, 3), "intrinsics", frame)
    depth = _as(view.depth, None, "depth", frame)
    if not np.isfinite(pose).all():
        raise BadViewError(f"view at frame {frame}: non-finite pose")
    if not np.isfinite(k).all():
        raise BadViewError(f"view at frame {frame}: non-finite intrinsics")
    if view.confidence is None:
        conf = np.ones(depth.shape, dtype=np.bool_)
    else:
        conf = np.asarray(view.confidence, dtype=np.bool_)
        if conf.shape != depth.shape:
            raise ValueError(
                f"view at frame {frame}: confidence has shape {conf.shape}, depth {depth.shape}"
            )
    if not np.isfinite(depth[conf]).all():
        raise BadViewError(f"view at frame {frame}: non-finite depth at confident pixels")
    if not np.array_equal(k[2], [0.0, 0.0, 1.0]) or k[0, 0] == 0.0 or k[1, 1] == 0.0:
        raise ValueError(f"view at frame {frame}: intrinsics are not pinhole: {k.tolist()}")
    valid = conf & (depth > 0.0)  # conf ∩ finite already holds; NaN > 0 is False anyway
    flat = np.flatnonzero(valid)
    n = int(flat.size)
    if n > max_points:
        flat = flat[(np.arange(max_points, dtype=np.int64) * n) // max_points]
    c2w = pose[:3]
    k_inv = np.asarray(np.linalg.inv(k), dtype=np.float64)
    world = _back_project(
        c2w, k_inv, flat % depth.shape[1], flat // depth.shape[1], depth.flat[flat]
    )
    w2c = np.asarray(np.linalg.inv(pose)[:3], dtype=np.float64)
    med = float(np.median(depth[valid])) if n else math.nan
    with np.errstate(divide="ignore"):  # 1/depth is only kept where depth > 0
        inv_depth_or_nan = np.where(valid, 1.0 / depth, np.nan).ravel()
    h, w = depth.shape
    return _Cloud(frame, c2w, w2c, k, k_inv, (h, w), inv_depth_or_nan, world, med, n)


def _back_project(
    c2w: FloatArray, k_inv: FloatArray, x: ArrayLike, y: ArrayLike, z: ArrayLike
) -> FloatArray:
    """World points of pixels (x, y) at z-depth z: ``c2w · (z · K⁻¹ [x, y, 1])``."""
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.float64)
    zs = np.asarray(z, dtype=np.float64)
    pix = np.stack([xs, ys, np.ones_like(xs)], axis=1)
    cam = (pix @ k_inv.T) * zs[:, None]
    out: FloatArray = cam @ c2w[:, :3].T + c2w[:, 3]
    return out


def _bilinear(values: FloatArray, h: int, w: int, x: FloatArray, y: FloatArray) -> FloatArray:
    """Bilinear interpolation of the flat (h·w) row-major map ``values`` at pixel positions
    (x, y) with 0 ≤ x ≤ w − 1, 0 ≤ y ≤ h − 1, from the 2×2 pixels around each position.

    A NaN among the four neighbours makes the result NaN, even at zero weight, so a point next
    to a non-confident pixel is dropped rather than half-trusted. On the last column/row the
    2×2 cell to the left/above is used (weight 1 on the edge pixel); a 1-pixel-wide map repeats
    its pixel. In-place arithmetic and ``take``: this runs once per ordered view pair on up to
    a few hundred thousand points, and temporaries dominate its cost.
    """
    x0 = np.floor(x)
    np.minimum(x0, max(w - 2, 0), out=x0)
    y0 = np.floor(y)
    np.minimum(y0, max(h - 2, 0), out=y0)
    fx = x - x0
    fy = y - y0
    y0 *= w
    y0 += x0
    index = y0.astype(np.intp)
    step_x, step_y = (1 if w > 1 else 0), (w if h > 1 else 0)
    top = values.take(index)
    right = values.take(index + step_x)
    right -= top
    right *= fx
    top += right  # row y0, interpolated in x
    index += step_y
    bottom = values.take(index)
    right = values.take(index + step_x)
    right -= bottom
    right *= fx
    bottom += right  # row y0 + 1
    bottom -= top
    bottom *= fy
    top += bottom
    return top


@dataclass(frozen=True, slots=True)
class Covisibility:
    """Pooled co-visibility errors of all ordered view pairs (SPEC §5 Global Memory).

    ``counts[a, b]`` is the number of co-visible points of view a in view b (before the ≥ 5
    rule) and ``kept[a, b]`` whether that pair entered the pool; ``errors`` is the pool (its
    order is unspecified: the median is taken in place), ``e`` its median (None when empty).
    ``source_sum``/``source_n`` are the error sum and count per source view (for the details);
    ``n_over_tau`` the number of pooled errors > TAU_G (counted before the in-place median).
    """

    frames: list[int]
    counts: NDArray[np.int64]
    kept: NDArray[np.bool_]
    errors: FloatArray
    e: float | None
    source_sum: FloatArray
    source_n: NDArray[np.int64]
    median_depth: list[float]
    n_points: list[int]
    n_confident: list[int]
    n_over_tau: int


def covisibility_errors(
    views: Sequence[GlobalView], max_points: int = GLOBAL_POINTS_PER_VIEW
) -> Covisibility:
    """Errors of every co-visible point over all ordered pairs of ``views`` (SPEC §5).

    Raises BadViewError for the first view with a non-finite pose, intrinsics or confident
    depth, ValueError for malformed views or duplicate frames.
    """
    if isinstance(max_points, bool) or int(max_points) != max_points or max_points < 1:
        raise ValueError(f"max_points must be a positive integer, got {max_points!r}")
    frames = [int(v.frame) for v in views]
    if len(set(frames)) != len(frames):
        raise ValueError(f"views have duplicate frames: {frames}")
    clouds = [_prepare(v, int(max_points)) for v in views]
    nv = len(clouds)
    sizes = np.array([c.world.shape[0] for c in clouds], dtype=np.intp)
    src = np.repeat(np.arange(nv, dtype=np.intp), sizes)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
    world = np.concatenate([c.world for c in clouds]) if nv else np.empty((0, 3), dtype=np.float64)
    wx, wy, wz = (np.ascontiguousarray(world[:, d]) for d in range(3))
    inv_med = np.array(
        [1.0 / c.median_depth if c.n_confident else 0.0 for c in clouds], dtype=np.float64
    )[src]
    lo, hi = COVIS_DEPTH_RATIO
    counts = np.zeros((nv, nv), dtype=np.int64)
    source_sum = np.zeros(nv, dtype=np.float64)
    source_n = np.zeros(nv, dtype=np.int64)
    parts: list[FloatArray] = []
    for b, tgt in enumerate(clouds):
        h, w = tgt.shape
        r, t = tgt.w2c[:, :3], tgt.w2c[:, 3]
        z = r[2, 0] * wx + r[2, 1] * wy + r[2, 2] * wz + t[2]
        front = z > 0.0
        front[offsets[b] : offsets[b + 1]] = False  # src is sorted: b's own points are one run
        sel = np.flatnonzero(front)
        xs, ys, zs = wx[sel], wy[sel], wz[sel]
        cx = r[0, 0] * xs + r[0, 1] * ys + r[0, 2] * zs + t[0]
        cy = r[1, 0] * xs + r[1, 1] * ys + r[1, 2] * zs + t[1]
        cz = z[sel]
        k = tgt.k  # pinhole: last row 0 0 1, so the projective divisor is cz
        u = (k[0, 0] * cx + k[0, 1] * cy) / cz + k[0, 2]
        v = (k[1, 0] * cx + k[1, 1] * cy) / cz + k[1, 2]
        inside = (u >= 0.0) & (u <= w - 1) & (v >= 0.0) & (v <= h - 1)
        sel, u, v, cz = sel[inside], u[inside], v[inside], cz[inside]
        ratio = cz * _bilinear(tgt.inv_depth_or_nan, h, w, u, v)  # projected z / b's depth
        co = (ratio > lo) & (ratio < hi)
        sel, ratio = sel[co], ratio[co]
        per_src = np.bincount(src[sel], minlength=nv)
        counts[:, b] = per_src
        pair_ok = per_src >= COVIS_MIN_POINTS
        source_n += np.where(pair_ok, per_src, 0)
        keep = pair_ok[src[sel]]
        sel, ratio = sel[keep], ratio[keep]
        if sel.size == 0:
            continue
        # X_a lies on b's ray through (u, v) at z-depth cz, X_b = b's back-projection of (u, v)
        # on the same ray at z-depth cz / ratio, so ‖X_a − X_b‖ = |1 − 1/ratio| · ‖X_a − C_b‖
        cb = tgt.c2w[:, 3]
        dx, dy, dz = wx[sel] - cb[0], wy[sel] - cb[1], wz[sel] - cb[2]
        err = np.abs(1.0 - 1.0 / ratio) * np.sqrt(dx * dx + dy * dy + dz * dz) * inv_med[sel]
        source_sum += np.bincount(src[sel], weights=err, minlength=nv)
        parts.append(err)
    kept = counts >= COVIS_MIN_POINTS
    np.fill_diagonal(kept, False)
    pooled = np.concatenate(parts) if parts else np.empty(0, dtype=np.float64)
    n_over_tau = int(np.count_nonzero(pooled > TAU_G))
    e = float(np.median(pooled, overwrite_input=True)) if pooled.size else None
    return Covisibility(
        frames=frames,
        counts=counts,
        kept=kept,
        errors=pooled,
        e=e,
        source_sum=source_sum,
        source_n=source_n,
        median_depth=[c.median_depth for c in clouds],
        n_points=[int(c.world.shape[0]) for c in clouds],
        n_confident=[c.n_confident for c in clouds],
        n_over_tau=n_over_tau,
    )


def global_score(e: float) -> float:
    """``100 / (1 + e / TAU_G)`` (seed 000, TAU_G = 0.05)."""
    return PERCENT / (1.0 + float(e) / TAU_G)


def global_memory(
    views: Sequence[GlobalView] | None,
    *,
    unavailable_reason: str | None = None,
    max_points: int = GLOBAL_POINTS_PER_VIEW,
) -> MetricResult:
    """Global Memory of one episode (SPEC §5; statuses SPEC §8).

    ``views`` are the reconstructed views (normally at ``select_views``); None means there is no
    reconstruction — not_applicable with ``unavailable_reason`` (never a made-up number).
    ``details["e"]`` feeds ``global_memory_model``.
    """
    if views is None:
        return MetricResult.not_applicable(unavailable_reason or REASON_NO_BACKEND)
    base: dict[str, Any] = {"views": [int(v.frame) for v in views], "tau_g": TAU_G}
    try:
        cov = covisibility_errors(views, max_points)
    except BadViewError as err:
        return MetricResult.not_applicable(str(err), base)
    e = cov.e
    usable = [f for f, n in zip(cov.frames, cov.n_confident, strict=True) if n > 0]
    n_pairs = len(cov.frames) * (len(cov.frames) - 1)
    n_kept = int(np.count_nonzero(cov.kept))
    n_err_all = int(cov.errors.size)
    per_view = []
    for a, frame in enumerate(cov.frames):
        n_err = int(cov.source_n[a])
        per_view.append(
            {
                "frame": frame,
                "n_confident": cov.n_confident[a],
                "n_points": cov.n_points[a],
                "median_depth": json_float(cov.median_depth[a]),
                "pairs_kept_as_source": int(np.count_nonzero(cov.kept[a])),
                "n_errors": n_err,
                "mean_error": json_float(cov.source_sum[a] / n_err) if n_err else None,
            }
        )
    details: dict[str, Any] = {
        **base,
        "usable_views": usable,
        "n_pairs": n_pairs,
        "pairs_evaluated": n_kept,
        "pairs_skipped": n_pairs - n_kept,
        "n_errors": n_err_all,
        "max_points_per_view": int(max_points),
        "mean_error": json_float(float(cov.source_sum.sum()) / n_err_all) if n_err_all else None,
        "share_over_tau_g": json_float(cov.n_over_tau / n_err_all) if n_err_all else None,
        "per_view": per_view,
        "e": None,
    }
    if len(usable) < 2:
        return MetricResult.not_applicable(
            f"fewer than 2 usable views ({len(usable)} of {len(cov.frames)} have confident depth)",
            details,
        )
    if e is None:
        return MetricResult.not_applicable(
            f"no co-visible view pair (none of {n_pairs} ordered pairs has "
            f"≥ {COVIS_MIN_POINTS} co-visible points)",
            details,
        )
    details["e"] = e
    return MetricResult.official(e, global_score(e), details)

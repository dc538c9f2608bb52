"""Global Memory of WorldMark (docs/methods.md#global_memory): is the whole trajectory geometrically
consistent?

One reconstruction (pose + depth + confidence per view), then, as the reference's
``vggt_omega_global_c3`` does (docs/methods.md#departures-from-the-reference: its lookup,
normaliser, point subsample and view selection), in float64:

- **Views** (``select_views``, in ``streameval.metrics.fits.geometry``, where the pipeline
  plans with it): frames ``0, s, 2s, …`` with ``s = max(1, round(fps))`` (one a second,
  Python's round); fewer than 6 → the sorted unique ``int()`` of 6 evenly spaced values over the
  clip; more than 64 → the entries at ``int()`` of 64 evenly spaced positions.
- **World points** of every pixel (integer coordinates): ``X_cam = ((x − cx)/fx·d, (y − cy)/fy·d,
  d)``, ``X = Rᵀ(X_cam − t)`` with the world-to-camera pose ``[R | t]``.
- **Normaliser** ``scale`` = the median of every depth > 1e-6 over all views (one for the
  episode). **Confidence threshold** = the 30 % quantile of the confidence over all views and
  pixels (a boolean mask is used as it is).
- **Subsample**: the pixels whose x and y are multiples of 16, with confidence ≥ threshold.
- For every ordered pair (i, j), i ≠ j: project i's points into j (``Z > 1e-6``,
  ``0 ≤ px < W``, ``0 ≤ py < H``: *inside*; fewer than 5 → the pair is skipped); the target is j's
  world point at the **nearest pixel by floor** (clipped to the image); *co-visible* when
  ``0.7 < Z / max(depth_j, 1e-6) < 1.4`` and j's confidence there passes (fewer than 5 → the
  pair is skipped); error = ``‖X − X_j(lookup)‖ / scale``.
- ``e`` = median of all errors pooled over pairs (not of pair medians); the column is
  ``100 / (1 + e / 0.05)``. Exact geometry therefore has a small floor (the floor lookup moves
  the target up to a pixel), as the published numbers do.

Diagnostics (not the score): ``mean_error`` and ``share_over_tau_g`` over the pool, because the
median is blind to a minority of inconsistent points (forgetting shows there and in Revisit
Memory). ``views is None`` (no reconstruction) → not_applicable, never a made-up number.
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
    TAU_G,
)
from streameval.core.arrays import F64
from streameval.core.metric_result import MetricResult
from streameval.errors import BadViewError
from streameval.metrics.arc import json_float

PERCENT = 100.0
METRIC_NAME = "global_memory"
REASON_NO_BACKEND = "no reconstruction backend and no pose + depth from the model or a sidecar"
GLOBAL_GRID_STRIDE = 16  # reference: source points on the pixels whose x and y are multiples


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
class Covisibility:
    """Pooled co-visibility errors of all ordered view pairs (module docstring).

    ``pairs`` has one entry per ordered pair (i outer, j inner): ``n_src``, ``n_inside``,
    ``n_cov``, ``skipped`` (None, ``"inside < 5"`` or ``"covisible < 5"``) and the pair's error
    median / mean. ``errors`` is the pool in that order; ``e`` its median (None when empty).
    """

    frames: list[int]
    pairs: list[dict[str, Any]]
    errors: F64
    e: float | None
    mean_e: float | None
    covis_ratio: float | None
    scale: float
    conf_thr: float | None
    n_points: list[int]


def _as(x: ArrayLike, shape: tuple[int, ...] | None, what: str, frame: int) -> F64:
    a = np.array(x, dtype=np.float64)
    if (shape is not None and a.shape != shape) or (shape is None and a.ndim != 2):
        want = "(h, w)" if shape is None else str(shape)
        raise ValueError(f"view at frame {frame}: {what} must have shape {want}, got {a.shape}")
    return a


def _view_arrays(view: GlobalView) -> tuple[F64, NDArray[np.bool_], F64, F64]:
    """(depth with 0 where not confident, confident mask, w2c 3×4, K) of one GlobalView."""
    frame = int(view.frame)
    pose = _as(view.pose, (4, 4), "pose", frame)
    k = _as(view.intrinsics, (3, 3), "intrinsics", frame)
    depth = _as(view.depth, None, "depth", frame)
    if not np.isfinite(pose).all():
        raise BadViewError(f"view at frame {frame}: non-finite pose")
    if not np.isfinite(k).all():
        raise BadViewError(f"view at frame {frame}: non-finite intrinsics")
    if not np.array_equal(k[2], [0.0, 0.0, 1.0]) or k[0, 0] == 0.0 or k[1, 1] == 0.0:
        raise BadViewError(f"view at frame {frame}: intrinsics are not pinhole: {k.tolist()}")
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
    ok = conf & (depth > 0.0)
    w2c = np.asarray(np.linalg.inv(pose)[:3], dtype=np.float64)
    return np.where(ok, depth, 0.0), ok, w2c, k


def _world_points(depth: F64, w2c: F64, k: F64) -> F64:
    """World point of every pixel (h, w, 3): ``Rᵀ(X_cam − t)`` (the reference's expression)."""
    h, w = depth.shape
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    cam = np.stack(
        [(xs - k[0, 2]) / k[0, 0] * depth, (ys - k[1, 2]) / k[1, 1] * depth, depth], axis=-1
    )
    r, t = w2c[:, :3], w2c[:, 3]
    out: F64 = (cam - t) @ r
    return out


def covisibility_arrays(
    depths: Sequence[F64],
    confs: Sequence[F64 | NDArray[np.bool_]],
    w2cs: Sequence[F64],
    ks: Sequence[F64],
    frames: Sequence[int] | None = None,
    stride: int = GLOBAL_GRID_STRIDE,
) -> Covisibility:
    """The reference's co-visibility errors on plain arrays (module docstring), in float64.

    ``confs`` are either float confidences (thresholded at their pooled 30 % quantile) or
    boolean masks (used as they are). ``stride`` is the point subsample (16 in the reference).
    """
    nv = len(depths)
    frames = list(range(nv)) if frames is None else [int(f) for f in frames]
    d64 = [np.asarray(d, dtype=np.float64) for d in depths]
    flat_depth = np.concatenate([d.ravel() for d in d64]) if nv else np.zeros(0)
    positive = flat_depth[flat_depth > 1e-6]
    scale = float(np.median(positive)) if positive.size else math.nan
    conf_thr: float | None = None
    if all(np.asarray(c).dtype == np.bool_ for c in confs):  # masks (or no view at all)
        conf_ok = [np.asarray(c, dtype=np.bool_) for c in confs]
    else:
        c64 = [np.asarray(c, dtype=np.float64) for c in confs]
        conf_thr = float(np.quantile(np.concatenate([c.ravel() for c in c64]), 0.3))
        conf_ok = [c >= conf_thr for c in c64]
    world = [
        _world_points(d, np.asarray(w, np.float64), np.asarray(k, np.float64))
        for d, w, k in zip(d64, w2cs, ks, strict=True)
    ]
    sources: list[F64] = []
    for d, ok, pts in zip(d64, conf_ok, world, strict=True):
        grid = np.zeros(d.shape, dtype=np.bool_)
        grid[::stride, ::stride] = True
        sources.append(pts[grid & ok])
    pairs: list[dict[str, Any]] = []
    parts: list[F64] = []
    lo, hi = COVIS_DEPTH_RATIO
    n_inside_all = n_cov_all = 0
    for i in range(nv):
        x = sources[i]
        for j in range(nv):
            if i == j:
                continue
            r = np.asarray(w2cs[j], dtype=np.float64)
            k = np.asarray(ks[j], dtype=np.float64)
            h, w = d64[j].shape
            xc = x @ r[:, :3].T + r[:, 3]
            z = xc[:, 2]
            with np.errstate(divide="ignore", invalid="ignore"):
                px = k[0, 0] * xc[:, 0] / z + k[0, 2]
                py = k[1, 1] * xc[:, 1] / z + k[1, 2]
            inside = (z > 1e-6) & (px >= 0) & (px < w) & (py >= 0) & (py < h)
            entry: dict[str, Any] = {
                "i": i,
                "j": j,
                "n_src": int(x.shape[0]),
                "n_inside": int(inside.sum()),
                "n_cov": None,
                "skipped": None,
            }
            pairs.append(entry)
            if entry["n_inside"] < COVIS_MIN_POINTS:
                entry["skipped"] = "inside < 5"
                continue
            xi = np.clip(np.floor(px[inside]), 0, w - 1).astype(np.intp)
            yi = np.clip(np.floor(py[inside]), 0, h - 1).astype(np.intp)
            ratio = z[inside] / np.maximum(d64[j][yi, xi], 1e-6)
            cov = (ratio > lo) & (ratio < hi) & conf_ok[j][yi, xi]
            entry["n_cov"] = int(cov.sum())
            n_inside_all += entry["n_inside"]
            n_cov_all += entry["n_cov"]
            if entry["n_cov"] < COVIS_MIN_POINTS:
                entry["skipped"] = "covisible < 5"
                continue
            diff = x[inside][cov] - world[j][yi[cov], xi[cov]]
            err = np.sqrt(np.sum(diff * diff, axis=1)) / scale
            entry["err_median"] = float(np.median(err))
            entry["err_mean"] = float(np.mean(err))
            parts.append(err)
    pooled = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)
    return Covisibility(
        frames=frames,
        pairs=pairs,
        errors=pooled,
        e=float(np.median(pooled)) if pooled.size else None,
        mean_e=float(np.mean(pooled)) if pooled.size else None,
        covis_ratio=n_cov_all / max(1, n_inside_all) if pooled.size else None,
        scale=scale,
        conf_thr=conf_thr,
        n_points=[int(s.shape[0]) for s in sources],
    )


def covisibility_errors(
    views: Sequence[GlobalView], stride: int = GLOBAL_GRID_STRIDE
) -> Covisibility:
    """``covisibility_arrays`` on reconstructed views (camera-to-world poses, masks).

    Raises BadViewError for the first view with a non-finite pose, intrinsics or confident
    depth, ValueError for malformed views or duplicate frames.
    """
    if isinstance(stride, bool) or int(stride) != stride or stride < 1:
        raise ValueError(f"stride must be a positive integer, got {stride!r}")
    frames = [int(v.frame) for v in views]
    if len(set(frames)) != len(frames):
        raise ValueError(f"views have duplicate frames: {frames}")
    arrays = [_view_arrays(v) for v in views]
    return covisibility_arrays(
        [a[0] for a in arrays],
        [a[1] for a in arrays],
        [a[2] for a in arrays],
        [a[3] for a in arrays],
        frames,
        int(stride),
    )


def global_score(e: float) -> float:
    """``100 / (1 + e / TAU_G)`` (WorldMark, TAU_G = 0.05)."""
    return PERCENT / (1.0 + float(e) / TAU_G)


def global_memory(
    views: Sequence[GlobalView] | None,
    *,
    unavailable_reason: str | None = None,
    stride: int = GLOBAL_GRID_STRIDE,
) -> MetricResult:
    """Global Memory of one episode (docs/methods.md#global_memory; statuses
    docs/methods.md#statuses).

    ``views`` are the reconstructed views (normally at ``select_views``); None means there is no
    reconstruction — not_applicable with ``unavailable_reason`` (never a made-up number).
    ``details["e"]`` feeds the model aggregate (``metrics.aggregation.global_memory``).
    """
    if views is None:
        return MetricResult.not_applicable(unavailable_reason or REASON_NO_BACKEND)
    base: dict[str, Any] = {"views": [int(v.frame) for v in views], "tau_g": TAU_G}
    try:
        cov = covisibility_errors(views, stride)
    except BadViewError as err:
        return MetricResult.not_applicable(str(err), base)
    n_pairs = len(cov.pairs)
    n_kept = sum(p["skipped"] is None for p in cov.pairs)
    n_err = int(cov.errors.size)
    details: dict[str, Any] = {
        **base,
        "n_pairs": n_pairs,
        "pairs_evaluated": n_kept,
        "pairs_skipped": n_pairs - n_kept,
        "pairs_skipped_inside": sum(p["skipped"] == "inside < 5" for p in cov.pairs),
        "n_points_per_view": cov.n_points,
        "grid_stride": int(stride),
        "scale": json_float(cov.scale),
        "n_errors": n_err,
        "covis_ratio": cov.covis_ratio,
        "mean_error": cov.mean_e,
        "share_over_tau_g": (
            json_float(int(np.count_nonzero(cov.errors > TAU_G)) / n_err) if n_err else None
        ),
        "e": None,
    }
    usable = sum(n > 0 for n in cov.n_points)
    if len(views) < 2 or usable == 0:
        return MetricResult.not_applicable(
            f"fewer than 2 usable views ({usable} of {len(views)} have confident points)",
            details,
        )
    if cov.e is None:
        return MetricResult.not_applicable(
            f"no co-visible view pair (none of {n_pairs} ordered pairs has "
            f"≥ {COVIS_MIN_POINTS} co-visible points)",
            details,
        )
    details["e"] = cov.e
    return MetricResult.official(cov.e, global_score(cov.e), details)

"""Motion-type weights for lateral and yaw segments (SPEC §3).

Strafing and turning both move content sideways; only parallax tells them apart. With depth,
seed 000 fits ``u = a·invZ + b`` over sampled frames: translation flow scales with inverse
depth (``a``), rotation flow does not (``b``). Without depth we use our own estimator (below)
that reads the rotation from the *vertical* flow, which translation along x never produces.

Perception stores, per sampled frame, the flow on a coarse grid (and invZ when depth exists);
the kernels here turn those samples into weights, so ``rescore`` needs no video.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from streameval.constants import (
    FIT_AMP_PCT,
    FIT_EPS,
    FIT_EVERY_S,
    FIT_FROM_FRAC,
    FIT_INVZ_PCT,
    FIT_MIN_FRAMES,
    FIT_PIXEL_STEP,
    FIT_TO_FRAC,
    FOV_DEG,
    MIN_DEPTH,
)

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]

# Depth-free grid: flow averaged over 4×4 blocks, then every FIT_PIXEL_STEP-th block, i.e. the
# same point density the depth path gets from a quarter-resolution depth map.
FLOWGRID_DOWNSAMPLE = 4
# Fewer pooled points than this and a least-squares fit means nothing.
MIN_FIT_POINTS = 10


def fit_frame_picks(lo_pos: float, hi_pos: float, n_frames: int, fps: float) -> list[int]:
    """Frames of one segment for the fit, by the reference's arithmetic (SPEC §3, §9).

    ``lo = int(lo_pos)``, ``hi = int(hi_pos)`` (the 25 % and 90 % points of the segment),
    frames ``lo, lo + s, …`` below ``min(hi, n_frames - 3)`` with ``s = max(1, round(fps))``
    (Python's round, half to even: one frame a second); if that gives fewer than 3, ``int()`` of
    3 evenly spaced values from ``lo`` to that limit. Duplicates are kept, as in the reference:
    a frame picked twice weighs twice in the pooled fit.
    """
    lo = int(lo_pos)
    limit = min(int(hi_pos), n_frames - 3)
    step = max(1, round(FIT_EVERY_S * fps))
    frames = list(range(lo, limit, step))
    if len(frames) < FIT_MIN_FRAMES:
        frames = [int(x) for x in np.linspace(lo, limit, FIT_MIN_FRAMES)]
    return frames


def fit_frames(start: int, end: int, fps: float, n_frames: int) -> list[int]:
    """Fit frames of a segment spanning frames [start, end) of an ``n_frames`` episode."""
    length = end - start
    return fit_frame_picks(
        start + FIT_FROM_FRAC * length, start + FIT_TO_FRAC * length, n_frames, fps
    )


def fit_frames_equal_split(j: int, n_keys: int, n_frames: int, fps: float) -> list[int]:
    """Fit frames of segment j of a delivery without an action log, as the reference picks
    them: ``lo = int(((j + 0.25)·N)/n)``, ``hi = int(((j + 0.9)·N)/n)``."""
    return fit_frame_picks(
        ((j + FIT_FROM_FRAC) * n_frames) / n_keys,
        ((j + FIT_TO_FRAC) * n_frames) / n_keys,
        n_frames,
        fps,
    )


def analysis_focal(width: int, fov_deg: float = FOV_DEG) -> float:
    """Focal length in analysis pixels for the assumed horizontal field of view."""
    return (width / 2.0) / math.tan(math.radians(fov_deg) / 2.0)


@dataclass(frozen=True, slots=True)
class FitSample:
    """Coarse flow grid of one sampled frame; ``invz`` is None without depth.

    ``x``/``y`` are pixel offsets from the image centre in analysis pixels.
    """

    frame: int
    x: F32
    y: F32
    u: F32
    v: F32
    invz: F32 | None


def _grid_coords(height: int, width: int, scale_x: float, scale_y: float) -> tuple[F32, F32]:
    ys, xs = np.mgrid[0:height:FIT_PIXEL_STEP, 0:width:FIT_PIXEL_STEP].astype(np.float64)
    # Centre of destination pixel j in source coordinates: (j + 0.5)·scale − 0.5.
    x = (xs + 0.5) * scale_x - 0.5
    y = (ys + 0.5) * scale_y - 0.5
    return x.astype(np.float32), y.astype(np.float32)


def raster_sample(
    depth: npt.NDArray[np.floating], u: npt.NDArray[np.floating]
) -> tuple[npt.NDArray[np.floating], npt.NDArray[np.floating]]:
    """``invZ = 1/max(depth, 1e-3)`` and u at every 6th element of the row-major flattened maps.

    This is the reference's sampling (SPEC §9): a stride over the flattened map, not a 2-D
    grid, so the sampled columns shift from row to row when the width is not a multiple of 6.
    The dtype of the inputs is kept (the reference computes invZ in the depth's own dtype).
    """
    if depth.shape != u.shape:
        raise ValueError(f"depth {depth.shape} and u {u.shape} must have the same shape")
    invz = 1.0 / np.maximum(depth, np.asarray(MIN_DEPTH, dtype=depth.dtype))
    return invz.reshape(-1)[::FIT_PIXEL_STEP], u.reshape(-1)[::FIT_PIXEL_STEP]


def sample_fit(frame: int, flow: F32, depth: F32 | None) -> FitSample:
    """Samples of ``flow`` (H, W, 2) at ``frame`` for the motion-type fit.

    With depth: flow resized to the depth map (bilinear, as the reference resizes u), every
    6th element of the flattened map (``raster_sample``). Without: flow block-averaged to a
    quarter size, every 6th block of a 2-D grid (our depth-free estimator needs x and y).
    """
    h_a, w_a, _ = flow.shape
    cx, cy = (w_a - 1) / 2.0, (h_a - 1) / 2.0
    if depth is not None:
        h, w = depth.shape
        small = cv2.resize(flow, (w, h), interpolation=cv2.INTER_LINEAR)
        invz, u = raster_sample(depth.astype(np.float32), np.asarray(small[..., 0], np.float32))
        idx = np.arange(0, h * w, FIT_PIXEL_STEP)
        x = ((idx % w + 0.5) * (w_a / w) - 0.5).astype(np.float32)
        y = ((idx // w + 0.5) * (h_a / h) - 0.5).astype(np.float32)
        return FitSample(
            frame=frame,
            x=(x - cx).astype(np.float32),
            y=(y - cy).astype(np.float32),
            u=np.ascontiguousarray(u, dtype=np.float32),
            v=np.ascontiguousarray(small[..., 1].reshape(-1)[::FIT_PIXEL_STEP], np.float32),
            invz=np.ascontiguousarray(invz, dtype=np.float32),
        )
    h, w = h_a // FLOWGRID_DOWNSAMPLE, w_a // FLOWGRID_DOWNSAMPLE
    small = cv2.resize(flow, (w, h), interpolation=cv2.INTER_AREA)
    grid = small[::FIT_PIXEL_STEP, ::FIT_PIXEL_STEP]
    gx, gy = _grid_coords(h, w, w_a / w, h_a / h)
    return FitSample(
        frame=frame,
        x=(gx - cx).reshape(-1).astype(np.float32),
        y=(gy - cy).reshape(-1).astype(np.float32),
        u=np.ascontiguousarray(grid[..., 0], dtype=np.float32).reshape(-1),
        v=np.ascontiguousarray(grid[..., 1], dtype=np.float32).reshape(-1),
        invz=None,
    )


@dataclass(frozen=True, slots=True)
class MotionFit:
    """Outcome of one segment's fit: the weights and how they were obtained."""

    p_trans: float
    p_yaw: float
    trans_amp: float
    rot_amp: float
    method: str  # "depth_parallax" (SPEC §3) or "flow_vertical_rotation" (ours, depth-free)
    n_frames: int
    n_points: int

    def to_json(self) -> dict[str, float | int | str]:
        return {
            "p_trans": self.p_trans,
            "p_yaw": self.p_yaw,
            "trans_amp": self.trans_amp,
            "rot_amp": self.rot_amp,
            "method": self.method,
            "n_frames": self.n_frames,
            "n_points": self.n_points,
        }


def _weights(trans_amp: float, rot_amp: float) -> tuple[float, float]:
    p_trans = trans_amp / (trans_amp + rot_amp + FIT_EPS)
    return p_trans, 1.0 - p_trans


@dataclass(frozen=True, slots=True)
class ParallaxFit:
    """The least-squares parallax fit of pooled points: u = a·invZ + b (SPEC §3)."""

    a: float
    b: float
    trans_amp: float
    rot_amp: float
    p_trans: float
    p_yaw: float
    n_points: int
    n_frames: int


def fit_parallax_points(frames: list[tuple[F64, F64]]) -> ParallaxFit | None:
    """Seed 000's fit on per-frame (invZ, u) samples, in float64, in the reference's order.

    Per frame, keep the points with P1 <= invZ <= P99 (inclusive, numpy linear percentiles
    over that frame's samples); pool the frames; least squares ``u = a·invZ + b`` with numpy's
    SVD solver (minimum-norm for the flat, rank-deficient cases); ``trans_amp = |a|·(P95 − P5)``
    of the pooled invZ, ``rot_amp = |b|``. None when fewer than ``MIN_FIT_POINTS`` remain.
    """
    invz_parts: list[F64] = []
    u_parts: list[F64] = []
    for invz_raw, u_raw in frames:
        invz = np.asarray(invz_raw, dtype=np.float64)
        u = np.asarray(u_raw, dtype=np.float64)
        ok = np.isfinite(invz) & np.isfinite(u)
        invz, u = invz[ok], u[ok]
        if invz.size == 0:
            continue
        lo, hi = np.percentile(invz, FIT_INVZ_PCT)
        keep = (invz >= lo) & (invz <= hi)
        invz_parts.append(invz[keep])
        u_parts.append(u[keep])
    if not invz_parts:
        return None
    invz_all = np.concatenate(invz_parts)
    u_all = np.concatenate(u_parts)
    if invz_all.size < MIN_FIT_POINTS:
        return None
    design = np.stack([invz_all, np.ones_like(invz_all)], axis=1)
    (a, b), *_ = np.linalg.lstsq(design, u_all, rcond=None)
    p5, p95 = np.percentile(invz_all, FIT_AMP_PCT)
    trans_amp = float(abs(a) * (p95 - p5))
    rot_amp = float(abs(b))
    p_trans, p_yaw = _weights(trans_amp, rot_amp)
    return ParallaxFit(
        float(a), float(b), trans_amp, rot_amp, p_trans, p_yaw, int(invz_all.size), len(frames)
    )


def fit_depth_parallax(samples: list[FitSample]) -> MotionFit | None:
    """Seed 000 on the samples that carry depth (``fit_parallax_points``)."""
    frames = [
        (s.invz.astype(np.float64), s.u.astype(np.float64)) for s in samples if s.invz is not None
    ]
    fit = fit_parallax_points(frames)
    if fit is None:
        return None
    return MotionFit(
        fit.p_trans,
        fit.p_yaw,
        fit.trans_amp,
        fit.rot_amp,
        "depth_parallax",
        fit.n_frames,
        fit.n_points,
    )


def fit_flow_rotation(samples: list[FitSample], focal: float) -> MotionFit | None:
    """Depth-free motion type (our estimator; SPEC §3 last point).

    A yaw of rate ω gives the depth-independent field u = ω·(f + x²/f), v = ω·x·y/f; a strafe
    gives u = f·Tx/Z and **no vertical flow**. So ω is fitted from v alone (least squares on
    g = x·y/f), the rotation's share of u is removed, and what remains is parallax:
    rot_amp = |ω|·f (rotation flow at the centre), trans_amp = P95 − P5 of the residual u —
    the same quantity as seed 000's |a|·(P95 − P5 of invZ) when the residual is a·invZ.
    Validated on the procedural world (tests/perception/test_motion_type.py).
    """
    xs, ys, us, vs = [], [], [], []
    for s in samples:
        ok = np.isfinite(s.u) & np.isfinite(s.v)
        xs.append(s.x[ok].astype(np.float64))
        ys.append(s.y[ok].astype(np.float64))
        us.append(s.u[ok].astype(np.float64))
        vs.append(s.v[ok].astype(np.float64))
    if not xs:
        return None
    x, y, u, v = (np.concatenate(p) for p in (xs, ys, us, vs))
    if x.size < MIN_FIT_POINTS:
        return None
    g = x * y / focal
    denom = float(np.dot(g, g))
    omega = float(np.dot(g, v)) / denom if denom > 0 else 0.0
    residual = u - omega * (focal + x * x / focal)
    p5, p95 = np.percentile(residual, FIT_AMP_PCT)
    trans_amp = float(p95 - p5)
    rot_amp = abs(omega) * focal
    p_trans, p_yaw = _weights(trans_amp, rot_amp)
    return MotionFit(
        p_trans, p_yaw, trans_amp, rot_amp, "flow_vertical_rotation", len(xs), int(x.size)
    )


def fit_motion_type(samples: list[FitSample], focal: float) -> MotionFit | None:
    """Depth parallax when every sample carries depth, else the depth-free estimator."""
    if not samples:
        return None
    if all(s.invz is not None for s in samples):
        return fit_depth_parallax(samples)
    return fit_flow_rotation(samples, focal)

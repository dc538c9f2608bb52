"""Motion-type weights for lateral and yaw segments (docs/methods.md#motion-type-fit), at scoring
time.

Strafing and turning both move content sideways; only parallax tells them apart. With depth,
WorldMark fits ``u = a·invZ + b`` over sampled frames: translation flow scales with inverse
depth (``a``), rotation flow does not (``b``). Without depth we use our own estimator (below)
that reads the rotation from the *vertical* flow, which translation along x never produces.

This is the scoring side: pure numpy, no OpenCV. Perception (``perception/motion_samples.py``)
only produces the samples (``FitSample``, ``core/episode/motion.py``: the flow on a coarse grid,
and invZ when depth exists) at the frames ``fit_frames`` plans; the fit turns them into
weights, so ``rescore`` needs neither video nor OpenCV.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from streameval.constants import (
    DEPTH_FREE_OMEGA_SE,
    DEPTH_FREE_SPREAD_PCT,
    FIT_AMP_PCT,
    FIT_EPS,
    FIT_EVERY_S,
    FIT_FROM_FRAC,
    FIT_INVZ_PCT,
    FIT_MIN_FRAMES,
    FIT_TO_FRAC,
    FOV_DEG,
    MOTION_FLOOR_PX,
)
from streameval.core.arrays import F64
from streameval.core.episode.motion import FitSample, MotionFit

# Fewer pooled points than this and a least-squares fit means nothing.
MIN_FIT_POINTS = 10
# A depth-free frame whose turn and parallax amplitudes together are below this fraction of its
# mean flow carries no weight: it moves, but shows neither a turn's field nor any parallax (a
# flat picture sliding sideways). Without it, 0 / (0 + 0 + 1e-6) typed such a frame a pure
# turn. Clean turns and strafes sit at 0.8-4x their mean flow (docs/methods.md#motion-type-fit).
TYPE_EVIDENCE_FRAC = 0.1
# The depth-free estimators, by the method name results and provenance record
# (docs/methods.md#motion-type-fit): the per-frame one with its noise floor on derotated samples
# is the default; the same on plain samples (a cache perceived before derotation) and the
# pooled one are kept so that a cache scored with them can be told apart.
DEPTH_FREE_METHOD = "flow_derotated_noise_floor"
PLAIN_DEPTH_FREE_METHOD = "flow_rotation_noise_floor"
POOLED_DEPTH_FREE_METHOD = "flow_vertical_rotation"


def fit_frame_picks(lo_pos: float, hi_pos: float, n_frames: int, fps: float) -> list[int]:
    """Frames of one segment for the fit, by the reference's arithmetic
    (docs/methods.md#motion-type-fit).

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


def fit_limit_settled(start: int, end: int, n_frames: int) -> bool:
    """Whether ``fit_frames(start, end, fps, n)`` is the same for every ``n >= n_frames``:
    the ``n - 3`` clamp no longer reaches the segment's 90 % point (a live episode still
    growing can then forget the segment's other samples)."""
    return int(start + FIT_TO_FRAC * (end - start)) <= n_frames - 3


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


def _weights(trans_amp: float, rot_amp: float) -> tuple[float, float]:
    p_trans = trans_amp / (trans_amp + rot_amp + FIT_EPS)
    return p_trans, 1.0 - p_trans


@dataclass(frozen=True, slots=True)
class ParallaxFit:
    """The least-squares parallax fit of pooled points: u = a·invZ + b
    (docs/methods.md#motion-type-fit)."""

    a: float
    b: float
    trans_amp: float
    rot_amp: float
    p_trans: float
    p_yaw: float
    n_points: int
    n_frames: int


def fit_parallax_points(frames: list[tuple[F64, F64]]) -> ParallaxFit | None:
    """WorldMark's fit on per-frame (invZ, u) samples, in float64, in the reference's order.

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
    """WorldMark's fit on the samples that carry depth (``fit_parallax_points``)."""
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
    """Depth-free motion type (our estimator; docs/methods.md#motion-type-fit, "Without depth").

    A yaw of rate ω gives the depth-independent field u = ω·(f + x²/f), v = ω·x·y/f; a strafe
    gives u = f·Tx/Z and **no vertical flow**. So ω is fitted from v alone (least squares on
    g = x·y/f), the rotation's share of u is removed, and what remains is parallax:
    rot_amp = |ω|·f (rotation flow at the centre), trans_amp = P95 − P5 of the residual u —
    the same quantity as WorldMark's |a|·(P95 − P5 of invZ) when the residual is a·invZ.
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
    omega = rotation_rate(x, y, v, focal)
    residual = u - rotation_flow(x, y, omega, focal)[0]
    p5, p95 = np.percentile(residual, FIT_AMP_PCT)
    trans_amp = float(p95 - p5)
    rot_amp = abs(omega) * focal
    p_trans, p_yaw = _weights(trans_amp, rot_amp)
    return MotionFit(
        p_trans, p_yaw, trans_amp, rot_amp, "flow_vertical_rotation", len(xs), int(x.size)
    )


def rotation_rate(x: F64, y: F64, v: F64, focal: float) -> float:
    """The yaw ω (radians per pair) that best explains the vertical flow ``v`` at image offsets
    (x, y): least squares of v on ``g = x·y/f``, the only vertical flow a yaw makes (a strafe
    makes none). 0 when the points span no such field (all on a row or a column)."""
    g = x * y / focal
    denom = float(np.dot(g, g))
    return float(np.dot(g, v)) / denom if denom > 0 else 0.0


def omega_std_error(x: F64, y: F64, residual: F64, focal: float) -> float:
    """Standard error of ``rotation_rate``'s ω given its v residual at (x, y): the residual's
    variance (n − 1 degrees of freedom) over ``Σg²``, ``g = x·y/f``. What the flow's own
    scatter in v alone would make of ω; 0 when the points span no turn's field."""
    g = x * y / focal
    denom = float(np.dot(g, g))
    if denom <= 0 or residual.size < 2:
        return 0.0
    return math.sqrt(float(np.dot(residual, residual)) / (residual.size - 1) / denom)


def rotation_flow(x: F64, y: F64, omega: float, focal: float) -> tuple[F64, F64]:
    """The flow (u, v) a yaw of ω radians makes at image offsets (x, y), to first order in ω:
    ``u = ω·(f + x²/f)``, ``v = ω·x·y/f``, whatever the depth."""
    return omega * (focal + x * x / focal), omega * (x * y / focal)


def _frame_amplitudes(s: FitSample, focal: float) -> tuple[float, float, int] | None:
    """(trans_amp, rot_amp, points) of one sampled frame, or None when it does not move.

    A frame whose mean flow is below the still-video floor (docs/methods.md#still-video-floor)
    carries no weight: its flow is codec noise, and read as parallax it made a turn that
    stutters look like a strafe. Otherwise ω is this frame's own (a turn that speeds up, slows
    down or stalls has one ω per frame, which a pooled ω averages away): least squares of v on
    ``g = x·y/f``; ``rot_amp = |ω|·f``. ``trans_amp`` is the spread ``P90 − P10`` of the
    residual ``u − ω·(f + x²/f)`` less the same spread of ``v − ω·g`` (``P95 − P5`` on samples
    perceived before derotation; ``DEPTH_FREE_SPREAD_PCT``): a lateral translation
    gives no vertical flow, so that spread is the flow's own error on this frame (the
    estimator's noise floor), which a pure turn would otherwise read as parallax (clean yaw
    p_yaw 0.90 → 0.96 on the procedural world, docs/methods.md#motion-type-fit). Likewise on
    derotated samples ``rot_amp`` is ``|ω|`` less 5 of its standard errors, in quadrature
    (``DEPTH_FREE_OMEGA_SE``): the ω that scatter in v alone makes, which a strafe past fine
    stripes would otherwise read as a turn. A moving frame
    with neither (below ``TYPE_EVIDENCE_FRAC`` of its mean flow) carries no weight either.
    u and v are each read where they are known: perception blanks them separately where the
    image has too little gradient along their axis (docs/methods.md#motion-type-fit, "Texture").
    """
    ok_u, ok_v = np.isfinite(s.u), np.isfinite(s.v)
    if min(int(ok_u.sum()), int(ok_v.sum())) < MIN_FIT_POINTS:
        return None
    x, y = s.x.astype(np.float64), s.y.astype(np.float64)
    u, v = s.u[ok_u].astype(np.float64), s.v[ok_v].astype(np.float64)
    moving = math.hypot(float(u.mean()), float(v.mean()))
    if moving < MOTION_FLOOR_PX:
        return None
    omega = rotation_rate(x[ok_v], y[ok_v], v, focal)
    turn_u, _ = rotation_flow(x[ok_u], y[ok_u], omega, focal)
    _, turn_v = rotation_flow(x[ok_v], y[ok_v], omega, focal)
    # a cache perceived before derotation keeps its numbers (and its method name)
    pct = DEPTH_FREE_SPREAD_PCT if s.derotated else FIT_AMP_PCT
    residual_v = v - turn_v
    u5, u95 = np.percentile(u - turn_u, pct)
    v5, v95 = np.percentile(residual_v, pct)
    trans_amp = max(0.0, float(u95 - u5) - float(v95 - v5))
    rot_amp = abs(omega) * focal
    if s.derotated:  # the turn's own noise floor (DEPTH_FREE_OMEGA_SE)
        omega_se = omega_std_error(x[ok_v], y[ok_v], residual_v, focal)
        rot_amp = math.sqrt(max(0.0, omega**2 - (DEPTH_FREE_OMEGA_SE * omega_se) ** 2)) * focal
    if trans_amp + rot_amp < TYPE_EVIDENCE_FRAC * moving:
        return None  # it moves, but neither as a turn nor with parallax: no type evidence
    return trans_amp, rot_amp, int(ok_u.sum())


def fit_flow_rotation_per_frame(samples: list[FitSample], focal: float) -> MotionFit | None:
    """Depth-free motion type, frame by frame (docs/methods.md#motion-type-fit, "Without depth").

    The amplitudes of the moving frames (``_frame_amplitudes``) are summed, so each frame weighs
    by its own motion and a still frame weighs nothing; ``p_trans = Σtrans / (Σtrans + Σrot +
    1e-6)``. No moving frame → no fit (None), the reference's rule for a fit without points.
    """
    parts = [a for a in (_frame_amplitudes(s, focal) for s in samples) if a is not None]
    if not parts:
        return None
    trans_amp = float(sum(a[0] for a in parts))
    rot_amp = float(sum(a[1] for a in parts))
    p_trans, p_yaw = _weights(trans_amp, rot_amp)
    n_points = sum(a[2] for a in parts)
    method = DEPTH_FREE_METHOD if all(s.derotated for s in samples) else PLAIN_DEPTH_FREE_METHOD
    return MotionFit(p_trans, p_yaw, trans_amp, rot_amp, method, len(parts), n_points)


def fit_motion_type(
    samples: list[FitSample], focal: float, stable: range | None = None
) -> MotionFit | None:
    """Depth parallax when every sample carries depth (WorldMark: every sample), else the
    per-frame depth-free estimator on the samples in ``stable`` (the segment's stable zone, as
    signal indices), when those give a fit, else on every sample.

    Why the stable zone: direction, purity and stability are read there, after the first 3 s of
    a segment (docs/methods.md#control-segments); the fit's 25-90 % picks start inside that
    transient, where a model that answers late still does the previous key, and a 3 s-late
    turn read as the strafe before it (docs/methods.md#motion-type-fit).
    """
    if not samples:
        return None
    if all(s.invz is not None for s in samples):
        return fit_depth_parallax(samples)
    if stable is not None:
        inside = [s for s in samples if s.frame in stable]
        fit = fit_flow_rotation_per_frame(inside, focal) if inside else None
        if fit is not None:
            return fit
    return fit_flow_rotation_per_frame(samples, focal)

"""Arc-length, angle and appearance helpers shared by the memory metrics
(docs/methods.md#memory-metrics).

Conventions (decided here once, used by Local and Revisit Memory alike):

- **Signal i is the motion rate at frame i.** Signal i is the stride-2 flow from frame i to
  frame i + 2 (docs/methods.md#analysis-frame-and-flow-units, ``t_i = i / fps``); for arc length it
  is attributed to the step from frame i to frame i + 1. The cumulative arc *at frame f* is
  therefore ``C(f) = sum(a_i for i < f)`` for f = 0..N (``C(0) = 0``), and the arc between
  frames f < g is ``C(g) − C(f)``. With a constant per-frame displacement this is exact; at a
  real key switch the one signal that straddles the switch is attributed half a frame early, and
  the same half-frame shift applies to both legs of a round trip, so pairing is unaffected.
- **Missing samples add no arc.** A non-finite signal contributes 0 to ``C`` (nothing is made
  up); callers report how many samples were missing.
- **Degrees ↔ flow** use the analysis width and WorldMark's FOV
  (docs/methods.md#degrees-on-the-analysis-width):
  ``px_per_degree = ANALYSIS_WIDTH / FOV_DEG = 640 / 70``.
- **Appearance distance** is ``1 − cos`` of the two frames' descriptors, recomputed in float64
  from re-normalised rows (the inputs are meant to be unit already; re-normalising makes the
  distance independent of float32 rounding), clipped to [0, 2]. A row that is not finite or has
  zero norm is *not embedded* and yields no distance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from streameval.constants import ANALYSIS_WIDTH, FOV_DEG
from streameval.core.arrays import F64, Indices, Mask


def px_per_degree() -> float:
    """Flow pixels per degree of yaw on the analysis frame: 640 / 70
    (docs/methods.md#degrees-on-the-analysis-width)."""
    return ANALYSIS_WIDTH / FOV_DEG


def degrees_to_flow_px(degrees: float) -> float:
    """An angle in degrees as horizontal flow in analysis-frame pixels."""
    return float(degrees) * px_per_degree()


def flow_px_to_degrees(px: float) -> float:
    """Horizontal flow in analysis-frame pixels as an angle in degrees."""
    return float(px) / px_per_degree()


def signal_pair(sx: ArrayLike, srad: ArrayLike) -> tuple[F64, F64]:
    """``sx`` and ``srad`` as fresh float64 1-D arrays of equal length (NaN = missing)."""
    sx_a = np.array(sx, dtype=np.float64)
    srad_a = np.array(srad, dtype=np.float64)
    if sx_a.ndim != 1 or sx_a.shape != srad_a.shape:
        raise ValueError(
            f"sx and srad must be 1-D of equal length, got {sx_a.shape} and {srad_a.shape}"
        )
    return sx_a, srad_a


def flow_magnitude(sx: ArrayLike, srad: ArrayLike) -> F64:
    """``mag = sqrt(Sx² + Srad²)`` per signal (docs/methods.md#local_memory); NaN where either
    channel is missing."""
    sx_a, srad_a = signal_pair(sx, srad)
    mag: F64 = np.sqrt(sx_a * sx_a + srad_a * srad_a)
    mag[~(np.isfinite(sx_a) & np.isfinite(srad_a))] = np.nan
    return mag


def cumulative_arc(rate: ArrayLike) -> F64:
    """``C(f) = sum(rate_i for i < f)`` for f = 0..N (length N + 1); missing samples add 0."""
    r = np.asarray(rate, dtype=np.float64)
    if r.ndim != 1:
        raise ValueError(f"rate must be a 1-D signal, got shape {r.shape}")
    out = np.zeros(r.size + 1, dtype=np.float64)
    np.cumsum(np.where(np.isfinite(r), r, 0.0), out=out[1:])
    return out


class Appearance:
    """Per-frame appearance descriptors, re-normalised in float64, with an embedded mask.

    ``embeddings`` is (T, D); rows that are not finite or have zero norm are *not embedded*.
    """

    __slots__ = ("embedded", "n_frames", "unit")

    def __init__(self, embeddings: ArrayLike) -> None:
        e = np.array(embeddings, dtype=np.float64)
        if e.ndim != 2 or e.shape[1] == 0:
            raise ValueError(f"embeddings must be a (frames, dim) array, got shape {e.shape}")
        finite = np.isfinite(e).all(axis=1)
        e[~finite] = 0.0
        norm = np.sqrt(np.einsum("td,td->t", e, e))
        embedded = finite & (norm > 0.0)
        unit = np.zeros_like(e)
        unit[embedded] = e[embedded] / norm[embedded, None]
        self.unit: F64 = unit
        self.embedded: Mask = embedded
        self.n_frames: int = int(e.shape[0])

    def has(self, frames: ArrayLike) -> Mask:
        """True for each frame index that exists and is embedded."""
        f = np.asarray(frames, dtype=np.intp)
        ok = (f >= 0) & (f < self.n_frames)
        out = np.zeros(f.shape, dtype=np.bool_)
        out[ok] = self.embedded[f[ok]]
        return out

    def distance(self, a: ArrayLike, b: ArrayLike) -> F64:
        """``1 − cos`` between frames ``a[k]`` and ``b[k]``; NaN where either is not embedded."""
        fa = np.asarray(a, dtype=np.intp)
        fb = np.asarray(b, dtype=np.intp)
        if fa.shape != fb.shape:
            raise ValueError(f"frame index arrays differ in shape: {fa.shape} vs {fb.shape}")
        ok = self.has(fa) & self.has(fb)
        d = np.full(fa.shape, np.nan, dtype=np.float64)
        if ok.any():
            cos = np.einsum("kd,kd->k", self.unit[fa[ok]], self.unit[fb[ok]])
            d[ok] = np.clip(1.0 - cos, 0.0, 2.0)
        return d


def json_float(x: float | None) -> float | None:
    """A plain float for JSON details; NaN/inf as None (docs/methods.md#statuses: nothing
    imputed)."""
    if x is None:
        return None
    value = float(x)
    return value if math.isfinite(value) else None


def json_floats(xs: Sequence[float] | F64) -> list[float | None]:
    """``json_float`` over a sequence."""
    return [json_float(float(x)) for x in xs]


def json_ints(xs: Sequence[int] | Indices) -> list[int]:
    """Plain ints for JSON details."""
    return [int(x) for x in xs]


def json_pairs(a: Indices, b: Indices) -> list[list[int]]:
    """``[[a0, b0], [a1, b1], ...]`` as plain ints."""
    return [[int(x), int(y)] for x, y in zip(a.tolist(), b.tolist(), strict=True)]

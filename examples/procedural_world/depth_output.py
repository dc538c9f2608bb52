"""What depth the world reports: a depth sensor's range and its single-valued pixels.

Why: the renderer knows every pixel's depth exactly, but a pixel of a depth *map* stands for a
footprint, and where that footprint spans many depths (grazing ground, the silhouette of an
object, a surface far in the fog) no single value is right. A reconstruction network marks such
pixels with low confidence, and WorldMark Global Memory drops its least confident 30 %
(docs/methods.md#global_memory); exact depth sent by a model has no confidence, so every such
pixel entered the pool, where the reference's nearest-pixel floor lookup turned a sub-pixel
shift into metres of error on grazing ground 17-22 m away. The world can instead say what a
depth sensor says there: unknown (NaN).

Two rules, both off by default (``WorldConfig.depth_range_m`` and
``WorldConfig.depth_resolvable_step``), applied to the z-depth grid after the backdrop (inf):

- **range**: z-depth beyond ``depth_range_m`` is unknown;
- **single-valued**: a pixel whose depth differs from a finite 4-neighbour's by more than
  ``step`` × the nearer of the two is unknown (on the ground plane, a row's relative step is
  z / (eye height · f): at 1.5 % and full resolution, ground beyond about 7 m).

The backdrop stays ``inf`` (infinitely far is known), the image is unchanged.
"""

from __future__ import annotations

import numpy as np

from streameval.core.arrays import F32, Mask


def unresolved(depth: F32, step: float) -> Mask:
    """Pixels whose depth differs from a finite 4-neighbour by more than ``step`` × the
    nearer of the two (a neighbour at inf or NaN does not count: the sky's edge is a known
    surface against a known infinity). In float32, on NaN in place of inf (every comparison
    with NaN is false): this runs on every full-resolution frame of a real-time world."""
    d = np.where(np.isfinite(depth), depth, np.float32(np.nan)).astype(np.float32, copy=False)
    s = np.float32(step)
    bad = np.zeros(d.shape, dtype=np.bool_)
    with np.errstate(invalid="ignore"):
        for a, b, lo, hi in (
            (d[:-1], d[1:], bad[:-1], bad[1:]),
            (d[:, :-1], d[:, 1:], bad[:, :-1], bad[:, 1:]),
        ):
            jump = np.abs(a - b) > s * np.minimum(a, b)
            lo |= jump
            hi |= jump
    return bad


def reported_depth(depth: F32, range_m: float | None, resolvable_step: float | None) -> F32:
    """``depth`` with the pixels the world reports as unknown set to NaN (module docstring);
    the same array when both rules are off."""
    if range_m is None and resolvable_step is None:
        return depth
    out = depth.copy()
    if resolvable_step is not None:
        out[unresolved(depth, resolvable_step)] = np.nan
    if range_m is not None:
        out[np.isfinite(depth) & (depth > range_m)] = np.nan
    return out

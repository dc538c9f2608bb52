"""Ground relief of a forgotten scene: after ``forget_scene_at_s`` the streets come back sunken.

Why: a world model that forgets a place re-generates its *geometry* when the camera comes back,
not only its texture; in a town of blocks the largest surface is the ground. The clean world's
ground is one flat plane (88 % of its depth points), so a world that only re-textured the ground
and nudged the blocks by a metre kept memory_scene_f1 near 1 (WorldAtlas,
docs/methods.md#memory_scene_f1, counts a point as supported within 0.02 x the scene diagonal,
1.5-2.7 m here). After the whole scene is forgotten, every slab's streets therefore sink by
``PIT_DEPTH_M``, each by its own hashed depth (so no single translation of the return cloud undoes
it), while the blocks stay on pedestals at ground level: objects keep standing on the ground and the
streets stay walkable.

The view-by-view ``forget`` defect does not sink anything: it is the moderate failure that
Global Memory's co-visibility test is calibrated on (moved objects, kept by its depth-ratio
test; a street sunk by metres would be dropped by that test as not co-visible).

Only sinking, never raising: a sunken street lies below the plane every other surface stands on,
so it can hide nothing, and the column renderer's order (ground below the nearest object's base)
still holds. A ray that reaches the plane over a pit goes on down until it meets the pit floor or
one of its walls; ``ground_depth`` finds that first hit by marching in horizontal steps of
``MARCH_STEP_M`` (less than the narrowest wall a ray can cross, a 4 m pedestal) and bisecting.
Without a forgotten scene there is no pit and the depth stays exactly the plane's.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from streameval.worlds.procedural_world.scene import (
    BLOCK_HALF_M,
    CELL_M,
    FOG_END_M,
    GROUND_SLAB_M,
    GROUND_SLAB_ORIGIN_M,
    PIT_DEPTH_M,
    GroundSlabs,
)

from streameval.core.arrays import F64

__all__ = ["PIT_DEPTH_M", "ground_depth", "relief_height"]


PIT_RAMP_M = 1.0
"""Width of the slope from a pedestal's edge down to the street floor."""
MARCH_STEP_M = 0.5
"""Horizontal step of the ray march (finer than any wall a ray can pass through)."""
BISECTIONS = 24

_STREET_HALF_M = CELL_M / 2 - BLOCK_HALF_M  # a street runs 4 m either side of its lattice line


def _street_weight(offset: F64) -> F64:
    """1 on the street floor, 0 on a pedestal, linear in between, from the signed offset to
    the slab's centre line (a lattice line, so the middle of a street)."""
    inner = _STREET_HALF_M - PIT_RAMP_M
    w: F64 = np.clip((_STREET_HALF_M - np.abs(offset)) / (_STREET_HALF_M - inner), 0, 1)
    return w


def relief_height(x: F64, z: F64, slabs: GroundSlabs) -> F64:
    """Ground height (≤ 0) at world (x, z) inside the slab window: −depth × the street weight of
    the nearer street (a pedestal is where both streets' weights are 0)."""
    n = slabs.pit.shape[0]
    fi = np.floor((x + GROUND_SLAB_ORIGIN_M) / GROUND_SLAB_M)
    fj = np.floor((z + GROUND_SLAB_ORIGIN_M) / GROUND_SLAB_M)
    si = np.clip(fi - slabs.i0, 0, n - 1).astype(np.intp)
    sj = np.clip(fj - slabs.j0, 0, n - 1).astype(np.intp)
    depth = slabs.pit[si, sj]
    weight = np.maximum(
        _street_weight(x - fi * GROUND_SLAB_M), _street_weight(z - fj * GROUND_SLAB_M)
    )
    h: F64 = -depth * weight
    return h


def ground_depth(
    t_plane: F64,
    dir_x: F64,
    dir_z: F64,
    dy: F64,
    origin: tuple[float, float, float],
    slabs: GroundSlabs,
    t_max: float | None = None,
) -> F64:
    """z-depth of the first ground hit of each ray, given its hit ``t_plane`` with the flat
    plane (broadcastable (rows, cols)); ``dir_x``/``dir_z`` are per-column world directions per
    unit z-depth, ``dy`` the per-row downward slope, ``origin`` the camera (x, height, z).

    Where the plane hit is not over a pit, that is the hit. Rays whose plane hit lies beyond
    the fog (fully fogged: they show the backdrop) keep it too. With ``t_max`` (the depth
    range the world reports, ``depth_output``), a ray over a pit whose hit lies beyond it is
    not marched further and gets NaN (unknown): the march over the whole full-resolution grid
    cost as much as the image's."""
    x0, height, z0 = origin
    shape = np.broadcast_shapes(t_plane.shape, dir_x.shape, dy.shape)
    t = np.broadcast_to(t_plane, shape).astype(np.float64)
    if not slabs.pit.any():
        return t
    dxb = np.broadcast_to(dir_x, shape)
    dzb = np.broadcast_to(dir_z, shape)
    dyb = np.broadcast_to(dy, shape)
    norm_h = np.hypot(dxb, dzb)
    out = t.copy()
    h0 = relief_height(x0 + t * dxb, z0 + t * dzb, slabs)
    pit = (h0 < 0) & (t * norm_h < FOG_END_M)
    if t_max is not None:
        out[pit & (t > t_max)] = np.nan  # a sunken hit is farther than the plane's
        pit &= t <= t_max
    active = np.flatnonzero(pit)
    if active.size == 0:
        return out
    flat = (dxb.ravel(), dzb.ravel(), dyb.ravel(), norm_h.ravel())

    def below(tt: F64, idx: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
        ax, az, ay = flat[0][idx], flat[1][idx], flat[2][idx]
        return height - ay * tt <= relief_height(x0 + tt * ax, z0 + tt * az, slabs)

    lo = t.ravel()[active]
    step = MARCH_STEP_M / flat[3][active]
    hit_lo = np.empty(0)
    hit_hi = np.empty(0)
    hit_idx = np.empty(0, dtype=np.intp)
    idx = active
    while idx.size:
        hi = lo + step
        hit = below(hi, idx)
        hit_lo = np.concatenate([hit_lo, lo[hit]])
        hit_hi = np.concatenate([hit_hi, hi[hit]])
        hit_idx = np.concatenate([hit_idx, idx[hit]])
        # a ray still above the floor beyond the fog shows the backdrop: keep the plane hit
        going = ~hit & (hi * flat[3][idx] < FOG_END_M)
        if t_max is not None:
            out.ravel()[idx[going & (hi > t_max)]] = np.nan
            going &= hi <= t_max
        idx, lo, step = idx[going], hi[going], step[going]
    for _ in range(BISECTIONS):
        mid = 0.5 * (hit_lo + hit_hi)
        hit = below(mid, hit_idx)
        hit_hi = np.where(hit, mid, hit_hi)
        hit_lo = np.where(hit, hit_lo, mid)
    out.ravel()[hit_idx] = hit_hi
    return out

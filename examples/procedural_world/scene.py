"""The infinite scene: objects on a jittered lattice, ground slabs, backdrop sectors.

Layout (why it looks like a town of blocks): the ground is cut by a square lattice of
``CELL_M`` = 12 m. Half the cells hold one vertical object (pillar, box or wall, 2.2–9 m
tall), always inside the ±``BLOCK_HALF_M`` = 2 m square around the cell centre. So the lattice
lines x = 12i and z = 12j are 8 m wide streets that no object ever touches. The camera starts
on a street crossing (the origin) looking along +z, and the default speeds turn 20 s of a key
into a whole number of cells or quarter turns (W 48 m, A/D 24 m, R/L 90°), so every worldmark
sequence (W, A, D, WRW, ADA, ...) walks along streets: the camera passes between objects,
never through them.

Why wide streets and a sparse field: the ground (whose flow is left/right symmetric) then
fills much of the view and no object passes within 4 m, so the flow statistics of a clean,
steady motion stay steady (stability ≈ 100) and the off-axis flow of a clean key stays small
(purity ≥ 95 on every family) — an obedient model must score as one.

A path that leaves the streets (a diagonal walk after a partial turn, a leaked yaw) can reach
an object. Objects whose footprint comes within ``CLEARANCE_M`` of the camera are simply not
drawn (the camera walks through them and they vanish): a documented artefact, chosen over
collisions because a collision would make the *clean* world disobey its keys.

Everything is a hash of the cell coordinates and the seed (see ``hashing``), so the field is
unbounded and a place looks the same whenever the camera returns, unless the ``forget``
defect has bumped the cell's generation (``AppearanceMemory``): then its object has a new
texture and has moved and changed size within its block, its ground slab a new texture. When
the whole scene is forgotten at once (``forget_scene``), the streets also sink (``relief``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from streameval.worlds.procedural_world.hashing import cell_uniform
from streameval.worlds.procedural_world.textures import (
    BACKDROP_WIDTH,
    GROUND_TILE,
    MATERIAL_COUNT,
    MATERIAL_TILE,
    TEXEL_M,
)

from streameval.core.arrays import F64, I64

CELL_M = 12.0
"""Object lattice spacing; the lattice lines are the streets."""
BLOCK_HALF_M = 2.0
"""Objects stay within this half-size of their cell centre: streets are 12 − 2·2 = 8 m wide."""
OBJECT_DENSITY = 0.5
"""Share of cells that hold an object."""
HEIGHT_RANGE_M = (2.2, 9.0)
"""Object heights. All exceed the camera height, so an object always hides the ground and the
bases of everything behind it, which is what lets the renderer work column by column."""
VIEW_DISTANCE_M = 62.0
"""Objects whose centre is farther than this are not considered; fog (``FOG_END_M``) has made
them invisible before, so they never pop in."""
FOG_START_M = 22.0
FOG_END_M = 56.0
"""Horizontal distance over which surfaces fade into the backdrop. Hides the far ends of the
object field and the grazing ground near the horizon, where texture would alias."""
CLEARANCE_M = 0.3
"""Objects this close to the camera (or containing it) are not drawn."""
GROUND_SLAB_M = CELL_M
GROUND_SLAB_ORIGIN_M = CELL_M / 2
"""Ground slabs are cell-sized squares offset by half a cell, so their seams run under the
blocks and each street is one slab wide. Each slab samples the ground tile at its own offset
and tint."""
BACKDROP_SECTORS = 12
"""The backdrop is split into 30° sectors, the unit the ``forget`` defect regenerates."""
MAX_OBJECT_HEIGHT_M = HEIGHT_RANGE_M[1]

KIND_PILLAR = 0
KIND_BOX = 1

FORGET_SHIFT_M = (0.5, 1.5)
"""A regenerated (forgotten) object moves this far from where the clean world has it, as far as
its block allows (see ``objects_in_cells``)."""
FORGET_SCALE = (0.15, 0.35)
"""... and its footprint and height grow or shrink by this fraction."""
PIT_DEPTH_M = (3.0, 6.0)
"""After the whole scene is forgotten (``AppearanceMemory.forget_scene``), a ground slab's
streets sink this far (drawn per slab; see ``relief``)."""

# hash streams, one per independent property
_S_PRESENT, _S_KIND, _S_HEIGHT, _S_SIZE_A, _S_SIZE_B = 0, 1, 2, 3, 4
_S_JITTER_X, _S_JITTER_Z, _S_MATERIAL, _S_U0, _S_V0, _S_AXIS = 5, 6, 7, 8, 9, 10
_S_MOVE_ANGLE, _S_MOVE_DIST, _S_SCALE_SIZE, _S_SCALE_HEIGHT = 11, 12, 13, 14
_S_GROUND_U, _S_GROUND_V, _S_GROUND_TINT, _S_SECTOR_U, _S_SECTOR_V = 20, 21, 22, 30, 31
_S_GROUND_PIT = 23


@dataclass(frozen=True, slots=True)
class ObjectSet:
    """Objects as parallel arrays (struct of arrays, so intersection tests vectorise).

    Pillars are circles of radius ``half_x`` (= ``half_z``); boxes and walls are axis-aligned
    rectangles. ``u0`` / ``v0`` are the texel offsets of the object in its material tile.
    """

    cell_i: I64
    cell_j: I64
    kind: I64
    x: F64
    z: F64
    half_x: F64
    half_z: F64
    height: F64
    material: I64
    u0: F64
    v0: F64

    def __len__(self) -> int:
        return int(self.x.shape[0])

    def take(self, index: npt.NDArray[np.intp] | npt.NDArray[np.bool_]) -> ObjectSet:
        """The subset selected by an index or boolean mask."""
        return ObjectSet(
            cell_i=self.cell_i[index],
            cell_j=self.cell_j[index],
            kind=self.kind[index],
            x=self.x[index],
            z=self.z[index],
            half_x=self.half_x[index],
            half_z=self.half_z[index],
            height=self.height[index],
            material=self.material[index],
            u0=self.u0[index],
            v0=self.v0[index],
        )


@dataclass
class AppearanceMemory:
    """Appearance generations for the ``forget`` defect, and what was in view last frame.

    Disabled (the default), every generation is 0 and nothing is tracked. Enabled, anything
    that was in view and then left it (objects: any column ray hits it, occluded or not;
    ground slabs: the slab overlaps the visible, unfogged ground; backdrop sectors: the sector
    overlaps the field of view) gets its generation bumped, so the hash draws a new object
    (new texture; moved and resized within its block, see ``objects_in_cells``), a new slab
    texture, a new stretch of sky next time it comes into view. Generation 0 is the
    clean world, so a forgetting world matches a clean one until something leaves the view.
    """

    enabled: bool = False
    version: int = 0
    epoch: int = 0
    """Generations added to everything, in view or not (``forget_scene``)."""
    objects: dict[tuple[int, int], int] = field(default_factory=dict)
    ground: dict[tuple[int, int], int] = field(default_factory=dict)
    sectors: I64 = field(default_factory=lambda: np.zeros(BACKDROP_SECTORS, np.int64))
    _seen_objects: set[tuple[int, int]] = field(default_factory=set)
    _seen_ground: set[tuple[int, int]] = field(default_factory=set)
    _seen_sectors: set[int] = field(default_factory=set)

    def reset(self) -> None:
        self.version = 0
        self.epoch = 0
        self.objects.clear()
        self.ground.clear()
        self.sectors[:] = 0
        self._seen_objects.clear()
        self._seen_ground.clear()
        self._seen_sectors.clear()

    def forget_scene(self) -> None:
        """Regenerate everything at once (the ``forget_scene_at_s`` defect)."""
        self.epoch += 1
        self.version += 1

    @property
    def changes(self) -> bool:
        """Whether anything can differ from the clean world."""
        return self.enabled or self.epoch > 0

    def object_generation(self, i: I64, j: I64) -> I64:
        seen = _lookup(self.objects, i, j) if self.enabled else np.zeros(i.shape, np.int64)
        return seen + self.epoch

    def ground_generation(self, i: I64, j: I64) -> I64:
        seen = _lookup(self.ground, i, j) if self.enabled else np.zeros(i.shape, np.int64)
        return seen + self.epoch

    def observe(
        self,
        objects: set[tuple[int, int]],
        ground: set[tuple[int, int]],
        sectors: set[int],
    ) -> None:
        """Record what is in view now; regenerate whatever was in view and is not any more."""
        if not self.enabled:
            return
        changed = False
        for cell in self._seen_objects - objects:
            self.objects[cell] = self.objects.get(cell, 0) + 1
            changed = True
        for cell in self._seen_ground - ground:
            self.ground[cell] = self.ground.get(cell, 0) + 1
            changed = True
        for sector in self._seen_sectors - sectors:
            self.sectors[sector] += 1
            changed = True
        self._seen_objects = objects
        self._seen_ground = ground
        self._seen_sectors = sectors
        if changed:
            self.version += 1


def _lookup(table: dict[tuple[int, int], int], i: I64, j: I64) -> I64:
    if not table:
        return np.zeros(i.shape, np.int64)
    flat = [table.get((int(a), int(b)), 0) for a, b in zip(i.ravel(), j.ravel(), strict=True)]
    return np.asarray(flat, dtype=np.int64).reshape(i.shape)


def objects_in_cells(cell_i: I64, cell_j: I64, seed: int, generation: I64) -> ObjectSet:
    """The objects of the given cells (cells without one are dropped).

    Generation 0 is the clean world. A later generation (the ``forget`` defect) keeps whether
    the cell has an object and its kind, draws a new material and texture offset, and moves
    and resizes it moderately (``_forget_geometry``): a changed object still sits where the
    old one was seen, so a geometric memory metric compares the two (their depths stay within
    its co-visibility ratio test) instead of dropping them as unrelated content.
    """
    zero = np.zeros(cell_i.shape, dtype=np.int64)
    present = cell_uniform(cell_i, cell_j, seed, zero, _S_PRESENT) < OBJECT_DENSITY
    ci, cj, gen = cell_i[present], cell_j[present], generation[present]
    layout = np.zeros(ci.shape, dtype=np.int64)

    def v(stream: int) -> F64:  # the clean world's layout
        return cell_uniform(ci, cj, seed, layout, stream)

    def g(stream: int) -> F64:  # this generation's draw
        return cell_uniform(ci, cj, seed, gen, stream)

    kind_draw = v(_S_KIND)
    size_a, size_b = v(_S_SIZE_A), v(_S_SIZE_B)
    along_x = v(_S_AXIS) < 0.5
    pillar = kind_draw < 0.35
    wall = kind_draw >= 0.75
    radius = 0.25 + 0.75 * size_a
    box_hx = 0.35 + 1.15 * size_a
    box_hz = 0.35 + 1.15 * size_b
    wall_long = 1.1 + 0.4 * size_a
    wall_thin = 0.12 + 0.13 * size_b
    half_x = np.where(
        pillar, radius, np.where(wall, np.where(along_x, wall_long, wall_thin), box_hx)
    )
    half_z = np.where(
        pillar, radius, np.where(wall, np.where(along_x, wall_thin, wall_long), box_hz)
    )
    lo, hi = HEIGHT_RANGE_M
    centre_x = ((ci + 0.5) * CELL_M).astype(np.float64)
    centre_z = ((cj + 0.5) * CELL_M).astype(np.float64)
    x = centre_x + (2.0 * v(_S_JITTER_X) - 1.0) * (BLOCK_HALF_M - half_x)
    z = centre_z + (2.0 * v(_S_JITTER_Z) - 1.0) * (BLOCK_HALF_M - half_z)
    height = lo + (hi - lo) * v(_S_HEIGHT) ** 1.5
    forgotten = gen > 0
    if forgotten.any():
        x, z, half_x, half_z, height = _forget_geometry(
            forgotten, (centre_x, centre_z), (x, z), (half_x, half_z), height, g
        )
    v_room = (MATERIAL_TILE * TEXEL_M - hi) / TEXEL_M  # vertical texel slack above the top
    return ObjectSet(
        cell_i=ci,
        cell_j=cj,
        kind=np.where(pillar, KIND_PILLAR, KIND_BOX).astype(np.int64),
        x=x,
        z=z,
        half_x=half_x,
        half_z=half_z,
        height=height,
        material=np.minimum((g(_S_MATERIAL) * MATERIAL_COUNT).astype(np.int64), MATERIAL_COUNT - 1),
        u0=np.floor(g(_S_U0) * MATERIAL_TILE),
        v0=np.floor(g(_S_V0) * v_room),
    )


def _forget_geometry(
    forgotten: npt.NDArray[np.bool_],
    centre: tuple[F64, F64],
    position: tuple[F64, F64],
    half: tuple[F64, F64],
    height: F64,
    draw: Callable[[int], F64],
) -> tuple[F64, F64, F64, F64, F64]:
    """Move and resize the ``forgotten`` objects; the others are returned unchanged.

    Footprint and height scale by 1 ± U(``FORGET_SCALE``) (the sign drawn too; the footprint
    stays within the clean world's size ranges, the height within ``HEIGHT_RANGE_M``). The
    centre moves by U(``FORGET_SHIFT_M``) metres in a drawn direction; an axis whose move
    would leave the block goes the other way, and the result is clamped to the block
    (±``BLOCK_HALF_M`` − half size around the cell centre), so a big box may move less than
    drawn but the streets stay clear of objects whatever the generation.
    """
    (cx, cz), (x, z), (hx, hz) = centre, position, half
    size_scale = _signed_scale(draw(_S_SCALE_SIZE))
    # the clean world's half sizes span 0.12 m (thinnest wall) to 1.5 m (widest box side)
    new_hx = np.clip(hx * size_scale, 0.12, 1.5)
    new_hz = np.clip(hz * size_scale, 0.12, 1.5)
    new_height = np.clip(height * _signed_scale(draw(_S_SCALE_HEIGHT)), *HEIGHT_RANGE_M)
    angle = 2.0 * math.pi * draw(_S_MOVE_ANGLE)
    lo, hi = FORGET_SHIFT_M
    dist = lo + (hi - lo) * draw(_S_MOVE_DIST)
    moved = []
    for c, p, h, step in ((cx, x, new_hx, np.cos(angle)), (cz, z, new_hz, np.sin(angle))):
        room = BLOCK_HALF_M - h
        ahead = p + dist * step
        q = np.where(np.abs(ahead - c) <= room, ahead, p - dist * step)
        moved.append(np.clip(q, c - room, c + room))
    return (
        np.where(forgotten, moved[0], x),
        np.where(forgotten, moved[1], z),
        np.where(forgotten, new_hx, hx),
        np.where(forgotten, new_hz, hz),
        np.where(forgotten, new_height, height),
    )


def _signed_scale(u: F64) -> F64:
    """1 − s or 1 + s (the lower or upper half of ``u``) with s uniform in ``FORGET_SCALE``:
    a forgotten object is never almost its old size."""
    lo, hi = FORGET_SCALE
    magnitude = lo + (hi - lo) * (2.0 * u % 1.0)
    return np.where(u < 0.5, 1.0 - magnitude, 1.0 + magnitude)


class ObjectField:
    """The objects near a point, with the lattice window cached between frames.

    The camera crosses a cell boundary every few seconds, so most frames reuse the previous
    window; the cache key includes the forget generation version so regenerated cells are
    re-hashed.
    """

    def __init__(self, seed: int, memory: AppearanceMemory) -> None:
        self.seed = seed
        self.memory = memory
        self._key: tuple[int, int, int, int, int] | None = None
        self._window: ObjectSet | None = None

    def near(self, x: float, z: float, radius: float) -> ObjectSet:
        """Every object whose cell lies in the square of half-size ``radius`` around (x, z)."""
        i0, i1 = math.floor((x - radius) / CELL_M), math.floor((x + radius) / CELL_M)
        j0, j1 = math.floor((z - radius) / CELL_M), math.floor((z + radius) / CELL_M)
        key = (i0, i1, j0, j1, self.memory.version)
        if key != self._key or self._window is None:
            grid_i, grid_j = np.meshgrid(
                np.arange(i0, i1 + 1, dtype=np.int64),
                np.arange(j0, j1 + 1, dtype=np.int64),
                indexing="ij",
            )
            ii, jj = grid_i.ravel(), grid_j.ravel()
            gen = self.memory.object_generation(ii, jj)
            self._window = objects_in_cells(ii, jj, self.seed, gen)
            self._key = key
        return self._window


def footprint_distance(objects: ObjectSet, x: float, z: float) -> F64:
    """Horizontal distance from (x, z) to each object's footprint (0 when inside)."""
    dx = np.abs(x - objects.x)
    dz = np.abs(z - objects.z)
    circle = np.maximum(np.hypot(dx, dz) - objects.half_x, 0.0)
    box = np.hypot(np.maximum(dx - objects.half_x, 0.0), np.maximum(dz - objects.half_z, 0.0))
    return np.where(objects.kind == KIND_PILLAR, circle, box)


@dataclass(frozen=True, slots=True)
class GroundSlabs:
    """Per-slab texture offsets (level-0 texels) and tint for a square window of slabs.

    Slab (gi, gj) covers x in [gi·6 − 3, gi·6 + 3), z likewise; ``i0``/``j0`` is the window
    corner, ``u``/``v``/``tint`` are indexed [gi − i0, gj − j0].
    """

    i0: int
    j0: int
    u: F64
    v: F64
    tint: F64
    pit: F64
    """How far the slab's streets sink (m): 0 unless the whole scene was forgotten, see
    ``relief``."""


def ground_slabs(x: float, z: float, half: int, seed: int, memory: AppearanceMemory) -> GroundSlabs:
    """The slabs within ``half`` slabs of the one under (x, z)."""
    ci = math.floor((x + GROUND_SLAB_ORIGIN_M) / GROUND_SLAB_M)
    cj = math.floor((z + GROUND_SLAB_ORIGIN_M) / GROUND_SLAB_M)
    ii, jj = np.meshgrid(
        np.arange(ci - half, ci + half + 1, dtype=np.int64),
        np.arange(cj - half, cj + half + 1, dtype=np.int64),
        indexing="ij",
    )
    gen = memory.ground_generation(ii, jj)
    lo, hi = PIT_DEPTH_M
    return GroundSlabs(
        i0=ci - half,
        j0=cj - half,
        u=np.floor(cell_uniform(ii, jj, seed, gen, _S_GROUND_U) * GROUND_TILE),
        v=np.floor(cell_uniform(ii, jj, seed, gen, _S_GROUND_V) * GROUND_TILE),
        tint=0.82 + 0.3 * cell_uniform(ii, jj, seed, gen, _S_GROUND_TINT),
        pit=np.where(gen > 0, lo + (hi - lo) * cell_uniform(ii, jj, seed, gen, _S_GROUND_PIT), 0.0)
        if memory.epoch > 0
        else np.zeros(ii.shape),
    )


def sector_offsets(memory: AppearanceMemory, seed: int) -> tuple[F64, F64]:
    """Backdrop texel offsets (u, v) per sector: zero in the clean world (a seamless panorama),
    a hashed jump for every sector the forget defect has regenerated."""
    gen = (
        memory.sectors + memory.epoch
        if memory.enabled
        else np.full(BACKDROP_SECTORS, memory.epoch, np.int64)
    )
    if not gen.any():
        zeros = np.zeros(BACKDROP_SECTORS)
        return zeros, zeros
    idx = np.arange(BACKDROP_SECTORS, dtype=np.int64)
    du = np.floor(cell_uniform(idx, idx, seed, gen, _S_SECTOR_U) * BACKDROP_WIDTH)
    dv = np.floor((cell_uniform(idx, idx, seed, gen, _S_SECTOR_V) - 0.5) * 40.0)
    return np.where(gen > 0, du, 0.0), np.where(gen > 0, dv, 0.0)


def sectors_in_view(heading: float, half_fov: float) -> set[int]:
    """Backdrop sectors that overlap the horizontal field of view [heading ± half_fov]."""
    width = 2.0 * math.pi / BACKDROP_SECTORS
    lo = math.floor((heading - half_fov) / width)
    hi = math.floor((heading + half_fov) / width)
    return {k % BACKDROP_SECTORS for k in range(lo, hi + 1)}


def ground_slabs_in_view(
    x: float, z: float, heading: float, tan_half: float, near: float, far: float
) -> set[tuple[int, int]]:
    """Slabs that overlap the visible ground: the trapezoid between depths ``near`` and
    ``far`` inside the field of view, tested against each slab square by separating axes."""
    c, s = math.cos(heading), math.sin(heading)
    corners_cam = np.array(
        [
            [-near * tan_half, near],
            [near * tan_half, near],
            [far * tan_half, far],
            [-far * tan_half, far],
        ]
    )
    # camera (right, forward) -> world (x, z)
    trap = np.stack(
        [
            x + corners_cam[:, 0] * c + corners_cam[:, 1] * s,
            z - corners_cam[:, 0] * s + corners_cam[:, 1] * c,
        ],
        axis=1,
    )
    lo = trap.min(axis=0)
    hi = trap.max(axis=0)
    gi = np.arange(
        math.floor((lo[0] + GROUND_SLAB_ORIGIN_M) / GROUND_SLAB_M),
        math.floor((hi[0] + GROUND_SLAB_ORIGIN_M) / GROUND_SLAB_M) + 1,
    )
    gj = np.arange(
        math.floor((lo[1] + GROUND_SLAB_ORIGIN_M) / GROUND_SLAB_M),
        math.floor((hi[1] + GROUND_SLAB_ORIGIN_M) / GROUND_SLAB_M) + 1,
    )
    grid_i, grid_j = np.meshgrid(gi, gj, indexing="ij")
    ii, jj = grid_i.ravel(), grid_j.ravel()
    x0 = ii * GROUND_SLAB_M - GROUND_SLAB_ORIGIN_M
    z0 = jj * GROUND_SLAB_M - GROUND_SLAB_ORIGIN_M
    square = np.stack(
        [
            np.stack([x0, z0], 1),
            np.stack([x0 + GROUND_SLAB_M, z0], 1),
            np.stack([x0 + GROUND_SLAB_M, z0 + GROUND_SLAB_M], 1),
            np.stack([x0, z0 + GROUND_SLAB_M], 1),
        ],
        axis=1,
    )  # (cells, 4, 2)
    edges = np.roll(trap, -1, axis=0) - trap
    axes = np.concatenate(
        [np.array([[1.0, 0.0], [0.0, 1.0]]), np.stack([-edges[:, 1], edges[:, 0]], 1)]
    )
    overlap = np.ones(ii.shape, dtype=bool)
    for axis in axes:
        sq = square @ axis
        tr = trap @ axis
        overlap &= (sq.max(axis=1) >= tr.min()) & (sq.min(axis=1) <= tr.max())
    return {(int(a), int(b)) for a, b in zip(ii[overlap], jj[overlap], strict=True)}

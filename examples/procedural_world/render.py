"""A 2.5D column ray caster: exact pinhole images and z-depth of the procedural scene.

Why column by column: the camera never pitches or rolls and every object is a vertical prism
standing on the ground and taller than the camera. So within one image column a ray meets,
from the bottom of the image up: the ground, then the nearest object (from its base up to its
top), then only objects whose tops rise higher on screen (the skyline), then the backdrop.
Intersections are therefore solved once per *column* (a few hundred rays against the nearby
objects), and each pixel only has to find which of at most ``MAX_LAYERS`` skyline layers it
falls in. Texturing is one ``cv2.remap`` into the mipmapped atlas plus one into the backdrop,
blended by distance fog. Texture colours and the sun come from a ``Look`` (``looks``), which
only the hard-cut defect changes; depth never depends on it.

The ray of pixel (r, c) is (dx[c], dy[r], 1) in camera axes, so the ray parameter of a hit is
its z-depth: the depth map is exact, not estimated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt
from streameval.worlds.procedural_world.camera import (
    CameraState,
    image_rays,
    intrinsics,
    resized_rays,
)
from streameval.worlds.procedural_world.depth_output import reported_depth
from streameval.worlds.procedural_world.looks import CLEAN_LOOK, Look, LookTextures, look_textures
from streameval.worlds.procedural_world.picture import Picture
from streameval.worlds.procedural_world.relief import ground_depth
from streameval.worlds.procedural_world.scene import (
    BACKDROP_SECTORS,
    CLEARANCE_M,
    FOG_END_M,
    FOG_START_M,
    GROUND_SLAB_M,
    GROUND_SLAB_ORIGIN_M,
    KIND_PILLAR,
    VIEW_DISTANCE_M,
    AppearanceMemory,
    GroundSlabs,
    ObjectField,
    ObjectSet,
    footprint_distance,
    ground_slabs,
    ground_slabs_in_view,
    sector_offsets,
    sectors_in_view,
)
from streameval.worlds.procedural_world.textures import (
    BACKDROP_HEIGHT,
    BACKDROP_TAN_MAX,
    BACKDROP_WIDTH,
    GROUND_TILE,
    MATERIAL_TILE,
    TEXEL_M,
    texture_bank,
)

from streameval.core.arrays import F32, F64, Image

MAX_LAYERS = 6
"""Skyline layers resolved per column. Farther, taller objects beyond the sixth visible one
are not drawn (the backdrop shows there); in this layout that is rare and far away, in fog."""
NEAR_M = 0.05
"""Hits closer than this are ignored (near clipping plane)."""
LOD_BIAS = 0.5
"""Added to log2(pixel footprint / texel) before flooring to a mip level: 0.5 rounds to the
nearest level, trading a little blur for no shimmer."""

_GROUND_SLAB_WINDOW = math.ceil(FOG_END_M / GROUND_SLAB_M) + 1
_TWO_PI = 2.0 * math.pi


@dataclass(frozen=True, slots=True)
class Rendered:
    """One rendered view. ``objects_in_view`` are the cells of every object some image or
    depth column ray hits (occluded or not): the view-frustum test of the forget defect."""

    image: Image
    depth: F32
    objects_in_view: set[tuple[int, int]]


@dataclass(frozen=True, slots=True)
class _Layers:
    """Skyline layers of a set of columns, index [layer, column]; absent layers have
    ``top = -inf`` (never cover a pixel) and ``t = inf``."""

    obj: npt.NDArray[np.intp]  # index into the ObjectSet, -1 when absent
    t: F64
    top: F64  # dy of the object's top edge (negative: above the horizon)
    count: int  # layers used by at least one column


class Renderer:
    """Renders a camera state of one world configuration.

    Everything that depends only on the image geometry (ray slopes, ground footprints and
    their mip levels, fog of the ground, backdrop rows) is computed once here.
    """

    def __init__(
        self,
        width: int,
        height: int,
        fov_deg: float,
        camera_height: float,
        depth_downsample: int,
        seed: int,
        memory: AppearanceMemory,
        depth_range_m: float | None = None,
        depth_resolvable_step: float | None = None,
    ) -> None:
        self.width = width
        self.depth_range_m = depth_range_m
        self.depth_resolvable_step = depth_resolvable_step
        self.height = height
        self.camera_height = camera_height
        self.seed = seed
        self.memory = memory
        self.field = ObjectField(seed, memory)
        self.bank = texture_bank()
        self.k = intrinsics(width, height, fov_deg)
        self.fx = float(self.k[0, 0])
        self.fy = float(self.k[1, 1])
        self.depth_w = max(1, width // depth_downsample)
        self.depth_h = max(1, height // depth_downsample)
        self.image_rays = image_rays(self.k, width, height)
        self.depth_rays = resized_rays(self.k, width, height, self.depth_w, self.depth_h)
        self.dx_all = np.concatenate([self.image_rays.dx, self.depth_rays.dx])
        self.norm_h = np.sqrt(1.0 + self.dx_all**2)  # |horizontal ray| per column
        # widest column slope of either grid: the frustum test of objects and ground
        self.tan_half = float(np.abs(self.dx_all).max()) + 1e-3
        self.half_fov = math.atan(self.tan_half)
        self.col_index = np.arange(width, dtype=np.intp)
        self.dy32 = self.image_rays.dy.astype(np.float32)[:, None]
        self._init_ground()
        self._init_backdrop()
        self._look_textures: tuple[Look, LookTextures] | None = None
        self.picture: Picture | None = None  # a case image standing in the start view

    # ----------------------------------------------------------------- constant geometry

    def _init_ground(self) -> None:
        """Per ground pixel: depth, fog, mip level and its atlas origin (all view-constant)."""
        dy = self.image_rays.dy
        rows = np.nonzero(dy > 1e-9)[0]
        self.ground_row0 = int(rows[0]) if rows.size else self.height
        dyg = dy[self.ground_row0 :]
        t = self.camera_height / dyg  # (Hg,) z-depth of the ground in each row
        norm_h = self.norm_h[: self.width]
        dist = t[:, None] * norm_h[None, :]  # horizontal distance
        # world metres per pixel on the ground: along the view (grows as t^2) and across it
        along = norm_h[None, :] * t[:, None] ** 2 / (self.camera_height * self.fy)
        across = t[:, None] * norm_h[None, :] / self.fx
        footprint = np.sqrt(along * across)
        level = np.floor(np.log2(np.maximum(footprint / TEXEL_M, 1e-9)) + LOD_BIAS)
        level = np.clip(level, 0, self.bank.ground_levels - 1).astype(np.intp)
        scale = np.exp2(-level.astype(np.float64))
        self.ground_t = t.astype(np.float32)[:, None]
        self.ground_scale = scale.astype(np.float32)
        self.ground_origin_x = self.bank.ground_origin_x[level].astype(np.float32)
        self.ground_origin_y = self.bank.ground_origin_y[level].astype(np.float32)
        self.ground_fog = _fog(dist).astype(np.float32)
        self.ground_clear = (1.0 - self.ground_fog).astype(np.float32)

    def _init_backdrop(self) -> None:
        """Backdrop rows (elevation) per pixel, and the rows that may show it at all."""
        tan_el = -self.image_rays.dy[:, None] / self.norm_h[None, : self.width]
        v = (0.5 - tan_el / (2.0 * BACKDROP_TAN_MAX)) * BACKDROP_HEIGHT - 0.5
        # Below the rows where the ground is nearer than the fog start everywhere, no pixel
        # can be fogged (objects there are nearer still), so the backdrop is not sampled.
        max_norm = float(self.norm_h[: self.width].max())
        fog_dy = self.camera_height * max_norm / FOG_START_M
        self.fog_rows = int(np.searchsorted(self.image_rays.dy, fog_dy, side="right"))
        self.backdrop_v = np.ascontiguousarray(v[: self.fog_rows], dtype=np.float32)
        self.azimuth = np.arctan(self.image_rays.dx)
        bd = self.bank.backdrop
        self.backdrop_padded = np.ascontiguousarray(
            np.concatenate([bd[:, -1:], bd, bd[:, :2]], axis=1)
        )

    # ------------------------------------------------------------------------ per frame

    def render(self, state: CameraState, look: Look = CLEAN_LOOK) -> Rendered:
        """Image, depth and the objects in view for the camera at ``state``, coloured and lit
        by ``look`` (see ``looks``; only the image depends on it)."""
        c, s = math.cos(state.heading), math.sin(state.heading)
        dir_x = self.dx_all * c + s
        dir_z = -self.dx_all * s + c
        objects = self._candidates(state, c, s)
        t_hit = self._intersect(state, objects, dir_x, dir_z)
        in_view = np.isfinite(t_hit).any(axis=0)
        objects_in_view = {
            (int(i), int(j))
            for i, j in zip(objects.cell_i[in_view], objects.cell_j[in_view], strict=True)
        }
        top_all = (self.camera_height - objects.height)[None, :] / t_hit
        layers = _skyline(t_hit, top_all, float(self.image_rays.dy[0]))
        w = self.width
        slabs = ground_slabs(state.x, state.z, _GROUND_SLAB_WINDOW, self.seed, self.memory)
        image = self._shade(state, objects, layers, (dir_x[:w], dir_z[:w]), slabs, look)
        raw_depth = self._depth(state, layers, (dir_x[w:], dir_z[w:]), slabs)
        if self.picture is not None:
            image, raw_depth = self._with_picture(self.picture, state, image, raw_depth)
        depth = reported_depth(raw_depth, self.depth_range_m, self.depth_resolvable_step)
        return Rendered(image=image, depth=depth, objects_in_view=objects_in_view)

    def _with_picture(
        self, picture: Picture, state: CameraState, image: Image, depth: F32
    ) -> tuple[Image, F32]:
        """A case image standing in the view (``picture``), drawn where it is the nearest
        surface, its depth in the depth map."""
        if depth.shape == image.shape[:2]:
            at_pixels = depth
        else:  # the depth grid is coarser: its nearest cell decides a pixel's occlusion
            at_pixels = np.asarray(
                cv2.resize(depth, (self.width, self.height), interpolation=cv2.INTER_NEAREST),
                dtype=np.float32,
            )
        image = picture.over_image(state, self.image_rays, image, at_pixels)
        return image, picture.over_depth(state, self.depth_rays, depth)

    def visible_ground_and_sky(self, state: CameraState) -> tuple[set[tuple[int, int]], set[int]]:
        """Ground slabs and backdrop sectors in view (what the forget defect tracks)."""
        near = self.camera_height / float(self.image_rays.dy[-1])
        slabs = ground_slabs_in_view(
            state.x, state.z, state.heading, self.tan_half, near, FOG_END_M
        )
        return slabs, sectors_in_view(state.heading, self.half_fov)

    def _candidates(self, state: CameraState, c: float, s: float) -> ObjectSet:
        """Objects that may show: within view distance, in the horizontal frustum (with a
        margin of the object's extent), and not on top of the camera."""
        window = self.field.near(state.x, state.z, VIEW_DISTANCE_M)
        rel_x = window.x - state.x
        rel_z = window.z - state.z
        along = rel_x * s + rel_z * c
        lateral = rel_x * c - rel_z * s
        extent = np.hypot(window.half_x, window.half_z)
        keep = np.hypot(rel_x, rel_z) < VIEW_DISTANCE_M
        keep &= along > -extent
        keep &= np.abs(lateral) <= along * self.tan_half + extent * math.hypot(1.0, self.tan_half)
        keep &= footprint_distance(window, state.x, state.z) > CLEARANCE_M
        kept = window.take(keep)
        # pillars first, then boxes: _intersect solves each kind on a contiguous block
        order = np.argsort(kept.kind != KIND_PILLAR, kind="stable")
        return kept.take(order)

    def _intersect(self, state: CameraState, objects: ObjectSet, dir_x: F64, dir_z: F64) -> F64:
        """Ray parameter (= z-depth) of each column ray's first hit with each object, inf
        for a miss; shape (columns, objects)."""
        n_pillar = int(np.count_nonzero(objects.kind == KIND_PILLAR))
        dxc = dir_x[:, None]
        dzc = dir_z[:, None]
        rel_x = state.x - objects.x
        rel_z = state.z - objects.z
        # pillars: |C + t d - O|^2 = r^2, nearest root
        px, pz, pr = rel_x[:n_pillar], rel_z[:n_pillar], objects.half_x[:n_pillar]
        a = dxc * dxc + dzc * dzc
        b = dxc * px + dzc * pz
        cc = px * px + pz * pz - pr * pr
        disc = b * b - a * cc
        with np.errstate(invalid="ignore"):
            t_pillar = (-b - np.sqrt(disc)) / a
        t_pillar = np.where((disc >= 0.0) & (t_pillar > NEAR_M), t_pillar, np.inf)
        # boxes: slab test against the axis-aligned rectangle
        bx, bz = rel_x[n_pillar:], rel_z[n_pillar:]
        hx, hz = objects.half_x[n_pillar:], objects.half_z[n_pillar:]
        inv_x = 1.0 / np.where(np.abs(dxc) < 1e-12, 1e-12, dxc)
        inv_z = 1.0 / np.where(np.abs(dzc) < 1e-12, 1e-12, dzc)
        tx1 = (-hx - bx) * inv_x
        tx2 = (hx - bx) * inv_x
        tz1 = (-hz - bz) * inv_z
        tz2 = (hz - bz) * inv_z
        t_near = np.maximum(np.minimum(tx1, tx2), np.minimum(tz1, tz2))
        t_far = np.minimum(np.maximum(tx1, tx2), np.maximum(tz1, tz2))
        t_box = np.where((t_near <= t_far) & (t_near > NEAR_M), t_near, np.inf)
        return np.concatenate([t_pillar, t_box], axis=1)

    def _textures(self, look: Look) -> LookTextures:
        """Atlas and backdrop as ``look`` colours them: the shared ones for a look that
        recolours nothing (the clean world), else recoloured once and kept until the look
        changes (a hard cut)."""
        if not look.recolours:
            return LookTextures(atlas=self.bank.atlas, backdrop_padded=self.backdrop_padded)
        cached = self._look_textures
        if cached is None or cached[0] != look:
            cached = (look, look_textures(self.bank, self.backdrop_padded, look))
            self._look_textures = cached
        return cached[1]

    def _surface_params(
        self,
        state: CameraState,
        objects: ObjectSet,
        layers: _Layers,
        dir_x: F64,
        dir_z: F64,
        look: Look,
    ) -> F32:
        """Per (layer, image column), as 5 planes: atlas x, atlas y = alpha + beta·dy,
        surface weight (1 − fog)·shade, and fog. The entry after a column's last layer is
        the backdrop (weight 0, fog 1)."""
        w = self.width
        k = layers.count
        table = np.zeros((5, k + 1, w), dtype=np.float32)
        table[4] = 1.0
        obj = layers.obj[:k, :w]
        valid = obj >= 0
        if not valid.any():
            return table
        lay, col = np.nonzero(valid)
        o = obj[lay, col]
        t = layers.t[lay, col]
        dxw, dzw = dir_x[col], dir_z[col]
        hit_x = state.x + t * dxw - objects.x[o]
        hit_z = state.z + t * dzw - objects.z[o]
        hx, hz = objects.half_x[o], objects.half_z[o]
        pillar = objects.kind[o] == KIND_PILLAR
        # perimeter coordinate (metres, continuous around box corners) and outward normal
        angle = np.arctan2(hit_x, hit_z)
        on_x_face = np.abs(np.abs(hit_x) - hx) < np.abs(np.abs(hit_z) - hz)
        sx = np.sign(hit_x)
        sz = np.sign(hit_z)
        perimeter_box = np.where(
            on_x_face,
            np.where(sx > 0, 2 * hx + (hit_z + hz), 4 * hx + 2 * hz + (hz - hit_z)),
            np.where(sz < 0, hit_x + hx, 2 * hx + 2 * hz + (hx - hit_x)),
        )
        arc = np.where(pillar, hx * (angle + math.pi), perimeter_box)
        nx = np.where(pillar, hit_x / hx, np.where(on_x_face, sx, 0.0))
        nz = np.where(pillar, hit_z / hx, np.where(on_x_face, 0.0, sz))
        sun = look.sun
        lit = look.diffuse * np.maximum(nx * sun[0] + nz * sun[1], 0.0)
        shade = look.ambient + lit / math.hypot(*sun)
        # mip level from the pixel footprint on the surface (geometric mean of both axes)
        norm_h = self.norm_h[col]
        cos_inc = np.abs(nx * dxw + nz * dzw) / norm_h
        f_vert = t / self.fy
        f_horz = t * norm_h / (self.fx * np.maximum(cos_inc, 0.15))
        level = np.floor(np.log2(np.sqrt(f_vert * f_horz) / TEXEL_M) + LOD_BIAS)
        level = np.clip(level, 0, self.bank.material_levels - 1).astype(np.intp)
        scale = np.exp2(-level.astype(np.float64))
        material = objects.material[o]
        u = np.mod(objects.u0[o] + arc / TEXEL_M, MATERIAL_TILE)
        fog = _fog(t * norm_h)
        table[0, lay, col] = self.bank.material_origin_x[material, level] + u * scale
        table[1, lay, col] = self.bank.material_origin_y[material, level] + scale * (
            objects.v0[o] + self.camera_height / TEXEL_M
        )
        table[2, lay, col] = -scale * t / TEXEL_M
        table[3, lay, col] = (1.0 - fog) * shade
        table[4, lay, col] = fog
        return table

    def _shade(
        self,
        state: CameraState,
        objects: ObjectSet,
        layers: _Layers,
        directions: tuple[F64, F64],
        slabs: GroundSlabs,
        look: Look,
    ) -> Image:
        """Texture, shade and fog every pixel: per-pixel layer label → per-layer parameters
        → ground overwrite → two remaps → blend."""
        h, w = self.height, self.width
        dy = self.dy32
        dir_x, dir_z = directions
        textures = self._textures(look)
        planes = self._surface_params(state, objects, layers, dir_x, dir_z, look).reshape(5, -1)
        label = np.zeros((h, w), dtype=np.uint8)
        tops = layers.top[: layers.count, :w].astype(np.float32)
        for k in range(layers.count):
            label += dy < tops[k][None, :]
        index = label.astype(np.intp)
        index *= w
        index += self.col_index
        flat = index.ravel()
        map_x = planes[0].take(flat).reshape(h, w)
        map_y = planes[2].take(flat).reshape(h, w)
        map_y *= dy
        map_y += planes[1].take(flat).reshape(h, w)
        weight = planes[3].take(flat).reshape(h, w)
        fog = planes[4].take(flat).reshape(h, w)
        self._ground(state, layers, directions, slabs, (map_x, map_y, weight, fog))
        surface = cv2.remap(
            textures.atlas, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
        )
        out = cv2.multiply(surface, cv2.merge([weight, weight, weight]), dtype=cv2.CV_32F)
        r = self.fog_rows
        if r > 0:
            fog_top = fog[:r]
            backdrop = self._backdrop(state, textures.backdrop_padded)
            haze = cv2.multiply(backdrop, cv2.merge([fog_top, fog_top, fog_top]), dtype=cv2.CV_32F)
            out[:r] += np.asarray(haze, dtype=np.float32)
        image: Image = np.asarray(cv2.convertScaleAbs(out), dtype=np.uint8)
        return image

    def _ground(
        self,
        state: CameraState,
        layers: _Layers,
        directions: tuple[F64, F64],
        slabs: GroundSlabs,
        maps: tuple[F32, F32, F32, F32],
    ) -> None:
        """Overwrite ``maps`` (atlas x, atlas y, weight, fog) at the ground pixels: below the
        base of each column's nearest object. Over a sunken street (``relief``) the texture
        and fog follow the true hit; the mip level stays the plane's."""
        r0 = self.ground_row0
        if r0 >= self.height:
            return
        w = self.width
        dir_x, dir_z = directions
        n = slabs.u.shape[0]
        # slab-window-local coordinates keep float32 exact however far the camera walks
        x0 = slabs.i0 * GROUND_SLAB_M - GROUND_SLAB_ORIGIN_M
        z0 = slabs.j0 * GROUND_SLAB_M - GROUND_SLAB_ORIGIN_M
        t = self.ground_t
        ground_fog, ground_clear = self.ground_fog, self.ground_clear
        if slabs.pit.any():
            camera = (state.x, self.camera_height, state.z)
            dy_rows = self.image_rays.dy[r0:, None]
            sunk = ground_depth(
                t.astype(np.float64), dir_x[None, :], dir_z[None, :], dy_rows, camera, slabs
            )
            t = sunk.astype(np.float32)
            ground_fog = _fog(sunk * self.norm_h[None, :w]).astype(np.float32)
            ground_clear = (1.0 - ground_fog).astype(np.float32)
        gx = t * dir_x.astype(np.float32)[None, :]
        gx += np.float32(state.x - x0)
        gz = t * dir_z.astype(np.float32)[None, :]
        gz += np.float32(state.z - z0)
        inv_slab = np.float32(1.0 / GROUND_SLAB_M)
        si = np.floor(gx * inv_slab)
        np.clip(si, 0, n - 1, out=si)
        sj = np.floor(gz * inv_slab)
        np.clip(sj, 0, n - 1, out=sj)
        slab = (si * np.float32(n) + sj).astype(np.intp).ravel()
        shape = gx.shape
        per_slab = self._slab_planes(slabs)
        coords = []
        for local, cell, offset_plane, origin in (
            (gx, si, 0, self.ground_origin_x),
            (gz, sj, 1, self.ground_origin_y),
        ):
            # texel coordinate inside the slab plus the slab's offset, wrapped once into
            # [0, tile): both terms are in range, so one conditional subtraction suffices
            cell *= np.float32(GROUND_SLAB_M)
            local -= cell
            local *= np.float32(1.0 / TEXEL_M)
            local += per_slab[offset_plane].take(slab).reshape(shape)
            local -= np.float32(GROUND_TILE) * (local >= GROUND_TILE)
            np.clip(local, 0.0, GROUND_TILE, out=local)
            local *= self.ground_scale
            local += origin
            coords.append(local)
        tint = per_slab[2].take(slab).reshape(shape)
        tint *= ground_clear
        t_base = layers.t[0, :w]
        base_dy = np.where(np.isfinite(t_base), self.camera_height / t_base, 0.0)
        select = (self.dy32[r0:] > base_dy.astype(np.float32)[None, :]).astype(np.float32)
        for dst, src in zip(maps, (coords[0], coords[1], tint, ground_fog), strict=True):
            part = dst[r0:]
            part += select * (src - part)

    @staticmethod
    def _slab_planes(slabs: GroundSlabs) -> F32:
        """(3, slabs) planes: u offset, v offset, tint."""
        return np.stack([slabs.u.ravel(), slabs.v.ravel(), slabs.tint.ravel()]).astype(np.float32)

    def _backdrop(self, state: CameraState, panorama: Image) -> Image:
        """The (padded) ``panorama`` over the rows that can be fogged (it is infinitely far:
        it only depends on the heading)."""
        r = self.fog_rows
        azimuth = state.heading + self.azimuth
        u = azimuth * (BACKDROP_WIDTH / _TWO_PI)
        v = self.backdrop_v
        if self.memory.changes:
            du, dv = sector_offsets(self.memory, self.seed)
            sector = np.floor(azimuth / (_TWO_PI / BACKDROP_SECTORS)).astype(np.int64)
            sector %= BACKDROP_SECTORS
            u = u + du[sector]
            v = (v + dv[sector].astype(np.float32)[None, :]).astype(np.float32)
        # the padded panorama has one wrapped column on the left: x = u mod width + 1 − 0.5
        u = np.mod(u, BACKDROP_WIDTH) + 0.5
        map_x = np.ascontiguousarray(np.broadcast_to(u.astype(np.float32), (r, self.width)))
        backdrop: Image = np.asarray(
            cv2.remap(panorama, map_x, v, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE),
            dtype=np.uint8,
        )
        return backdrop

    def _depth(
        self,
        state: CameraState,
        layers: _Layers,
        directions: tuple[F64, F64],
        slabs: GroundSlabs,
    ) -> F32:
        """Exact z-depth on the depth grid; inf where the infinitely far backdrop shows,
        through the sky or through full fog."""
        w = self.width
        dy = self.depth_rays.dy[:, None]
        top = layers.top[: layers.count, w:]
        t = layers.t[: layers.count, w:]
        label = np.zeros((self.depth_h, self.depth_w), dtype=np.intp)
        for k in range(layers.count):
            label += dy < top[k][None, :]
        t_table = np.concatenate([t, np.full((1, self.depth_w), np.inf)], axis=0)
        depth = np.take_along_axis(t_table, label, axis=0)
        t_base = layers.t[0, w:] if layers.count else np.full(self.depth_w, np.inf)
        base_dy = np.where(np.isfinite(t_base), self.camera_height / t_base, 0.0)
        with np.errstate(divide="ignore"):
            ground = np.broadcast_to(self.camera_height / dy, depth.shape)
        if slabs.pit.any():
            below = dy[:, 0] > 0
            sunk = ground_depth(
                ground[below],
                directions[0][None, :],
                directions[1][None, :],
                dy[below],
                (state.x, self.camera_height, state.z),
                slabs,
                self.depth_range_m,
            )
            ground = ground.copy()
            ground[below] = sunk
        depth = np.where(dy > base_dy[None, :], ground, depth)
        # A surface beyond the fog's end is drawn as pure backdrop: what the pixel shows is
        # the infinitely far sky, so its depth is too (a finite depth there inflated the scene
        # diagonal, and so the distance threshold of docs/methods.md#memory_scene_f1, by a ground no
        # image shows).
        hidden = depth * self.norm_h[None, w:] >= FOG_END_M
        return np.where(hidden, np.inf, depth).astype(np.float32)


def _fog(distance: F64) -> F64:
    """Share of the backdrop in a surface at this horizontal distance."""
    return np.clip((distance - FOG_START_M) / (FOG_END_M - FOG_START_M), 0.0, 1.0)


def _skyline(t_hit: F64, top: F64, dy_top: float) -> _Layers:
    """Visible objects per column, nearest first, each one rising above all nearer ones.

    Layer k+1 is the nearest object whose top is higher on screen than layer k's (any nearer
    one with a higher top would have been chosen before), so the loop is a handful of argmins
    instead of a sort. Stops when every column's skyline is above the top image row.
    """
    n_cols = t_hit.shape[0]
    obj = np.full((MAX_LAYERS, n_cols), -1, dtype=np.intp)
    t = np.full((MAX_LAYERS, n_cols), np.inf)
    tops = np.full((MAX_LAYERS, n_cols), -np.inf)
    count = 0
    if t_hit.shape[1] == 0:
        return _Layers(obj=obj, t=t, top=tops, count=0)
    rows = np.arange(n_cols)
    current = np.full(n_cols, np.inf)
    for k in range(MAX_LAYERS):
        candidate = np.where(top < current[:, None], t_hit, np.inf)
        best = np.argmin(candidate, axis=1)
        t_best = candidate[rows, best]
        ok = np.isfinite(t_best)
        if not ok.any():
            break
        obj[k] = np.where(ok, best, -1)
        t[k] = t_best
        tops[k] = np.where(ok, top[rows, best], -np.inf)
        current = np.where(ok, tops[k], current)
        count = k + 1
        if (current < dy_top).all():
            break
    return _Layers(obj=obj, t=t, top=tops, count=count)

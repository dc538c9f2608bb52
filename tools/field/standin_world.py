"""A small key-obeying world that stands in for a world model when the field's own server code
is run here (tools/field/README.md).

Why a room and not a shifted picture: streameval tells a strafe from a turn only by parallax
(a strafe moves near things faster than far ones, a turn moves everything alike and bends
the vertical flow), so a stand-in that merely slides its picture would be ambiguous to the
very check it is meant to exercise. This one is a pinhole camera (70 degree horizontal field
of view) in a textured box room: floor 1.6 m below the eye, ceiling 2.4 m above, walls 20 m
away. The start image is projected onto the room from the start pose, so the first frame is
the image itself and moving reveals the room's own texture around it.

Moves, per step of ``1 / fps`` seconds: forward/back 1.5 m/s along the heading, strafe
1.5 m/s sideways, turn 30 deg/s, pitch 20 deg/s (clamped to +-30 deg). Numpy only; no code of
streameval or of the servers it stands in for.
"""

from __future__ import annotations

import math

import numpy as np

FORWARD_M_S = 1.5
STRAFE_M_S = 1.5
YAW_DEG_S = 30.0
PITCH_DEG_S = 20.0
HFOV_DEG = 70.0
FLOOR, CEILING, WALL = -1.6, 2.4, 20.0
TEXEL_M = 0.05
FOG_M = 30.0


def _texture(size: int = 512, seed: int = 7) -> np.ndarray:
    """Multi-octave colour value noise with some hard-edged tiles: features at many scales so
    optical flow has something to follow near and far. Wraps at its edges."""
    rng = np.random.default_rng(seed)
    out = np.zeros((size, size, 3), np.float32)
    for cells, weight in ((4, 0.35), (8, 0.3), (16, 0.2), (32, 0.15), (64, 0.1), (128, 0.06)):
        grid = rng.random((cells, cells, 3)).astype(np.float32)
        pos = np.arange(size, dtype=np.float32) * cells / size
        i0 = np.floor(pos).astype(int)
        frac = pos - i0
        i1 = (i0 + 1) % cells
        rows = grid[i0] * (1 - frac)[:, None, None] + grid[i1] * frac[:, None, None]
        cols = rows[:, i0] * (1 - frac)[None, :, None] + rows[:, i1] * frac[None, :, None]
        out += weight * cols
    tiles = rng.random((16, 16, 3)).astype(np.float32)
    out += 0.35 * np.kron(tiles, np.ones((size // 16, size // 16, 1), np.float32))
    out -= out.min()
    return (255.0 * out / out.max()).astype(np.float32)


def _sample(image: np.ndarray, u: np.ndarray, v: np.ndarray, wrap: bool) -> np.ndarray:
    """Bilinear lookup of ``image`` at float pixel coordinates (u across, v down)."""
    h, w = image.shape[:2]
    u0 = np.floor(u).astype(np.int64)
    v0 = np.floor(v).astype(np.int64)
    fu = (u - u0)[..., None]
    fv = (v - v0)[..., None]
    if wrap:
        u0, u1 = u0 % w, (u0 + 1) % w
        v0, v1 = v0 % h, (v0 + 1) % h
    else:
        u0, u1 = np.clip(u0, 0, w - 1), np.clip(u0 + 1, 0, w - 1)
        v0, v1 = np.clip(v0, 0, h - 1), np.clip(v0 + 1, 0, h - 1)
    top = image[v0, u0] * (1 - fu) + image[v0, u1] * fu
    bottom = image[v1, u0] * (1 - fu) + image[v1, u1] * fu
    return top * (1 - fv) + bottom * fv


def fit_image(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """Scale and centre-crop an RGB image to ``width`` x ``height`` (nearest, numpy only)."""
    h, w = image.shape[:2]
    scale = max(width / w, height / h)
    sw, sh = max(width, round(w * scale)), max(height, round(h * scale))
    ys = np.clip((np.arange(sh) / scale).astype(int), 0, h - 1)
    xs = np.clip((np.arange(sw) / scale).astype(int), 0, w - 1)
    big = image[ys][:, xs]
    top, left = (sh - height) // 2, (sw - width) // 2
    return np.ascontiguousarray(big[top : top + height, left : left + width, :3])


class StandInWorld:
    """``reset(image)`` then ``step(forward, right, yaw, pitch)`` (shares of full speed in
    [-1, 1]; right > 0 strafes right, yaw > 0 turns right, pitch > 0 looks up) → the next RGB
    uint8 frame of ``height`` x ``width``."""

    def __init__(self, width: int = 640, height: int = 360, fps: float = 17.0) -> None:
        self.width, self.height, self.fps = width, height, float(fps)
        self.f = (width / 2) / math.tan(math.radians(HFOV_DEG / 2))
        xs = (np.arange(width, dtype=np.float32) + 0.5 - width / 2) / self.f
        ys = (height / 2 - np.arange(height, dtype=np.float32) - 0.5) / self.f
        self.rx, self.ry = np.meshgrid(xs, ys)
        self.texture = _texture()
        self.fog = self.texture.reshape(-1, 3).mean(axis=0)
        self.image: np.ndarray | None = None
        self.x = self.z = self.yaw = self.pitch = 0.0

    def reset(self, image: np.ndarray | None) -> np.ndarray:
        """Back to the start pose; the start image (any size, RGB) is what it sees there."""
        self.x = self.z = self.yaw = self.pitch = 0.0
        self.image = (
            None if image is None else fit_image(image, self.width, self.height).astype(np.float32)
        )
        return self.render()

    def step(self, forward: float, right: float, yaw: float, pitch: float = 0.0) -> np.ndarray:
        dt = 1.0 / self.fps
        self.yaw += math.radians(YAW_DEG_S) * yaw * dt
        limit = math.radians(30.0)
        self.pitch = min(limit, max(-limit, self.pitch + math.radians(PITCH_DEG_S) * pitch * dt))
        s, c = math.sin(self.yaw), math.cos(self.yaw)
        move_f, move_r = FORWARD_M_S * forward * dt, STRAFE_M_S * right * dt
        bound = WALL - 2.0
        self.x = min(bound, max(-bound, self.x + s * move_f + c * move_r))
        self.z = min(bound, max(-bound, self.z + c * move_f - s * move_r))
        return self.render()

    def render(self) -> np.ndarray:
        cp, sp = math.cos(self.pitch), math.sin(self.pitch)
        cx, cy, cz = self.rx, self.ry * cp + sp, -self.ry * sp + cp
        s, c = math.sin(self.yaw), math.cos(self.yaw)
        dx, dy, dz = c * cx + s * cz, cy, -s * cx + c * cz
        big = np.float32(1e9)
        with np.errstate(divide="ignore", invalid="ignore"):
            t_y = np.where(dy < 0, FLOOR / dy, np.where(dy > 0, CEILING / dy, big))
            t_x = np.where(
                dx > 0, (WALL - self.x) / dx, np.where(dx < 0, (-WALL - self.x) / dx, big)
            )
            t_z = np.where(
                dz > 0, (WALL - self.z) / dz, np.where(dz < 0, (-WALL - self.z) / dz, big)
            )
        t = np.minimum(np.minimum(t_y, t_x), t_z)
        px, py, pz = self.x + t * dx, t * dy, self.z + t * dz
        u = np.where(t == t_y, px, np.where(t == t_x, pz, px)) / TEXEL_M
        v = np.where(t == t_y, pz, -py) / TEXEL_M
        rgb = _sample(self.texture, u, v, wrap=True)
        if self.image is not None:
            front = pz > 0.05
            with np.errstate(divide="ignore", invalid="ignore"):
                iu = self.width / 2 + self.f * px / pz - 0.5
                iv = self.height / 2 - self.f * py / pz - 0.5
            inside = (
                front & (iu >= 0) & (iu <= self.width - 1) & (iv >= 0) & (iv <= self.height - 1)
            )
            if inside.any():
                rgb[inside] = _sample(self.image, iu[inside], iv[inside], wrap=False)
        fog = np.exp(-t / FOG_M)[..., None]
        if self.image is not None:
            fog = np.where(inside[..., None], 1.0, fog)
        out = rgb * fog + self.fog * (1 - fog)
        return np.clip(out, 0, 255).astype(np.uint8)

"""Procedural textures of the world, packed into one atlas with mipmaps.

Why an atlas: the renderer turns every pixel into one (x, y) position in a single image and
lets ``cv2.remap`` do the bilinear lookups in one call, which is what keeps a 640×432 frame
inside a few milliseconds.

Why mipmaps: far surfaces cover many texels per pixel. Sampling the full-resolution texture
there aliases, and aliasing *shimmers* from frame to frame, which optical flow reads as motion
and the memory metrics read as changing content. Each level is the previous one low-passed
and halved (``cv2.pyrDown``); the renderer picks the level whose texel matches the pixel
footprint.

Every texture is periodic (built in the Fourier domain), so surfaces tile without seams, and
it is generated from a fixed seed: the bank is the same for every world, which lets the
process build it once. Worlds differ (``WorldConfig.seed``) by which texture each object gets
and where in it the object samples.
"""

from __future__ import annotations

import colorsys
import functools
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from streameval.core.arrays import F32, F64, Image

TEXEL_M = 0.025
"""Size of a level-0 texel of the ground and of the object materials, in metres. The nearest
ground row (about 3.4 m away) spans about 1.6 cm per pixel, so level 0 is barely magnified."""

GROUND_TILE = 1024
"""Side of the ground tile in texels (25.6 m); every 6 m ground slab samples it at its own
offset, so the repetition is never visible."""

MATERIAL_TILE = 512
"""Side of an object material tile in texels (12.8 m): taller than the tallest object plus
its vertical offset, so object textures only wrap horizontally (around the object)."""

MATERIAL_COUNT = 12
"""How many distinct object materials exist; objects also differ by offset within one."""

BACKDROP_WIDTH = 2048
"""Texels of the backdrop panorama per 360° (about 0.7 texel per image pixel at 70° FOV)."""

BACKDROP_HEIGHT = 512
BACKDROP_TAN_MAX = 0.6
"""The backdrop rows span tan(elevation) in [-0.6, 0.6]; the image never looks further up or
down than tan(25.3°) = 0.47 (vertical half FOV at 640×432, 70° horizontal)."""

ATLAS_PAD = 2
"""Wrap-around border around every atlas entry so bilinear taps at a tile edge read the
periodic neighbour instead of the next entry."""

_MIN_LEVEL_SIDE = 16
_ATLAS_MAX_WIDTH = 4096
_BANK_SEED = 20_240_611


@dataclass(frozen=True, slots=True)
class TextureBank:
    """The packed textures and where each mip level sits in the atlas.

    ``*_origin_x/y[level]`` is the atlas position of texture coordinate (0, 0) of that level,
    already shifted by −0.5 so that ``origin + u`` is the ``cv2.remap`` coordinate of the
    continuous texture coordinate ``u`` (texel ``i`` is centred at ``u = i + 0.5``).
    """

    atlas: Image
    ground_origin_x: F64  # (ground_levels,)
    ground_origin_y: F64
    material_origin_x: F64  # (MATERIAL_COUNT, material_levels)
    material_origin_y: F64
    backdrop: Image  # (BACKDROP_HEIGHT, BACKDROP_WIDTH, 3), wraps horizontally

    @property
    def ground_levels(self) -> int:
        return int(self.ground_origin_x.shape[0])

    @property
    def material_levels(self) -> int:
        return int(self.material_origin_x.shape[1])


def periodic_noise(
    rng: np.random.Generator,
    shape: tuple[int, int],
    feature_px: float,
    largest_px: float,
    slope: float = 1.0,
) -> F32:
    """Zero-mean, unit-variance coloured noise that tiles in both axes.

    White noise is shaped in the Fourier domain: amplitude ~ 1/f^slope between the
    ``largest_px`` and ``feature_px`` wavelengths, with a Gaussian roll-off below
    ``feature_px`` so that no detail is finer than a few texels (bilinear sampling then stays
    smooth, which sub-pixel optical flow needs).
    """
    white = rng.standard_normal(shape)
    spectrum = np.fft.rfft2(white)
    fy = np.fft.fftfreq(shape[0])[:, None]
    fx = np.fft.rfftfreq(shape[1])[None, :]
    freq = np.sqrt(fx * fx + fy * fy)
    low = 1.0 / largest_px
    amplitude = np.maximum(freq, low) ** (-slope) * np.exp(-((freq * feature_px) ** 2))
    amplitude[0, 0] = 0.0
    field = np.fft.irfft2(spectrum * amplitude, s=shape)
    field = (field - field.mean()) / (field.std() + 1e-12)
    out: F32 = np.asarray(field, dtype=np.float32)
    return out


def _hsv_to_rgb(hue: float, sat: float, val: float) -> F64:
    """One colour, hue in [0, 1), as float RGB in [0, 1]."""
    return np.array(colorsys.hsv_to_rgb(hue, sat, val), dtype=np.float64)


def _to_image(rgb: npt.NDArray[np.floating]) -> Image:
    out: Image = np.asarray(np.clip(np.rint(rgb * 255.0), 0, 255), dtype=np.uint8)
    return out


def _mix(c1: F64, c2: F64, weight: F32) -> F32:
    w = weight[..., None]
    return (c1[None, None, :] * (1.0 - w) + c2[None, None, :] * w).astype(np.float32)


def _ground_tile(rng: np.random.Generator) -> Image:
    """Earth, gravel and moss: strong luminance detail at several scales."""
    n = GROUND_TILE
    patches = periodic_noise(rng, (n, n), feature_px=24.0, largest_px=400.0, slope=1.2)
    detail = periodic_noise(rng, (n, n), feature_px=2.5, largest_px=120.0, slope=0.9)
    pebbles = periodic_noise(rng, (n, n), feature_px=3.0, largest_px=12.0, slope=0.0)
    moss = np.clip(0.5 + 0.45 * patches, 0.0, 1.0)
    colour = _mix(np.array([0.50, 0.42, 0.32]), np.array([0.34, 0.44, 0.24]), moss)
    lum = 0.62 + 0.20 * detail + 0.16 * np.tanh(1.5 * pebbles)
    return _to_image(colour * np.clip(lum, 0.15, 1.3)[..., None])


def _material_tile(rng: np.random.Generator, index: int) -> Image:
    """One object material: two-colour noise, some with brick courses or vertical streaks.

    The structured variants give strong, well-localised edges (good optical-flow features)
    while the noise keeps every patch distinct (good for appearance-based memory metrics).
    """
    n = MATERIAL_TILE
    hue = (index * 0.618_034 + rng.uniform(0.0, 0.1)) % 1.0
    c1 = _hsv_to_rgb(hue, rng.uniform(0.25, 0.65), rng.uniform(0.55, 0.9))
    c2 = _hsv_to_rgb((hue + rng.uniform(0.05, 0.25)) % 1.0, rng.uniform(0.2, 0.6), 0.5)
    blend = np.clip(0.5 + 0.5 * periodic_noise(rng, (n, n), 20.0, 256.0, 1.3), 0.0, 1.0)
    detail = periodic_noise(rng, (n, n), feature_px=2.5, largest_px=64.0, slope=0.8)
    lum: npt.NDArray[np.floating] = 0.72 + 0.22 * detail
    style = index % 3
    ys, xs = np.mgrid[0:n, 0:n].astype(np.float32)
    if style == 0:
        # brick courses: 0.32 m tall, staggered 0.8 m long bricks, darker mortar lines
        course = 12.8
        brick = 32.0
        row = np.floor(ys / course)
        x_shift = xs + (row % 2) * (brick / 2.0)
        mortar_y = np.minimum(ys % course, course - ys % course)
        mortar_x = np.minimum(x_shift % brick, brick - x_shift % brick)
        mortar = np.exp(-(np.minimum(mortar_y, mortar_x) ** 2) / 1.5)
        lum = lum * (1.0 - 0.45 * mortar)
    elif style == 1:
        # vertical streaks (weathering, bark): anisotropic noise
        streak = periodic_noise(rng, (n // 32, n), feature_px=3.0, largest_px=60.0, slope=0.6)
        streak_full = cv2.resize(streak, (n, n), interpolation=cv2.INTER_CUBIC)
        lum = lum + 0.15 * np.tanh(streak_full)
    return _to_image(_mix(c1, c2, blend) * np.clip(lum, 0.1, 1.3)[..., None])


def _backdrop(rng: np.random.Generator) -> Image:
    """A 360° panorama: sky with clouds above a band of distant hills.

    The backdrop is infinitely far (it only turns with the camera), so it must carry texture
    everywhere it shows: clouds above, hills around the horizon, hills continued below the
    horizon where it shows through the distance fog of the ground.
    """
    h, w = BACKDROP_HEIGHT, BACKDROP_WIDTH
    tan_el = BACKDROP_TAN_MAX * (1.0 - 2.0 * (np.arange(h, dtype=np.float64) + 0.5) / h)
    profile = periodic_noise(rng, (8, w), feature_px=6.0, largest_px=700.0, slope=1.5)[0]
    ridge = 0.05 + 0.035 * profile.astype(np.float64)  # tan(elevation) of the hill tops
    clouds = periodic_noise(rng, (h, w), feature_px=4.0, largest_px=500.0, slope=1.1)
    hill_tex = periodic_noise(rng, (h, w), feature_px=2.0, largest_px=150.0, slope=0.9)
    sky_top = np.array([0.30, 0.48, 0.80])
    sky_low = np.array([0.70, 0.80, 0.92])
    sky_w = np.clip(tan_el / 0.45, 0.0, 1.0)[:, None, None]
    sky = sky_low[None, None, :] * (1.0 - sky_w) + sky_top[None, None, :] * sky_w
    cloud = np.clip(0.5 + 0.45 * clouds, 0.0, 1.0)[..., None].astype(np.float64)
    sky = sky * (1.0 - 0.75 * cloud) + np.array([0.97, 0.97, 0.99]) * 0.75 * cloud
    hill_mix = np.clip(0.5 + 0.5 * hill_tex, 0.0, 1.0)
    hill_colour = _mix(np.array([0.36, 0.45, 0.40]), np.array([0.52, 0.55, 0.50]), hill_mix)
    hills = hill_colour * (0.8 + 0.25 * np.tanh(hill_tex))[..., None]
    below_ridge = (tan_el[:, None] < ridge[None, :])[..., None]
    return _to_image(np.where(below_ridge, hills, sky))


def _mip_chain(tile: Image) -> list[Image]:
    """Level 0 and its periodic pyrDown levels down to ``_MIN_LEVEL_SIDE`` texels."""
    levels = [tile]
    while min(levels[-1].shape[:2]) // 2 >= _MIN_LEVEL_SIDE:
        prev = levels[-1]
        wrapped = cv2.copyMakeBorder(prev, 4, 4, 4, 4, cv2.BORDER_WRAP)
        down = cv2.pyrDown(wrapped)
        levels.append(np.ascontiguousarray(down[2:-2, 2:-2]))
    return levels


def _pack(entries: list[Image]) -> tuple[Image, list[tuple[int, int]]]:
    """Shelf-pack padded images into one atlas; returns it and each entry's top-left corner."""
    order = sorted(range(len(entries)), key=lambda i: -entries[i].shape[0])
    corners: list[tuple[int, int]] = [(0, 0)] * len(entries)
    x = y = shelf_h = width = 0
    for i in order:
        eh, ew = entries[i].shape[:2]
        if x + ew > _ATLAS_MAX_WIDTH:
            x, y, shelf_h = 0, y + shelf_h, 0
        corners[i] = (x, y)
        x += ew
        shelf_h = max(shelf_h, eh)
        width = max(width, x)
    atlas = np.zeros((y + shelf_h, width, 3), dtype=np.uint8)
    for i, (cx, cy) in enumerate(corners):
        eh, ew = entries[i].shape[:2]
        atlas[cy : cy + eh, cx : cx + ew] = entries[i]
    return atlas, corners


@functools.lru_cache(maxsize=1)
def texture_bank() -> TextureBank:
    """Build (once per process) the ground, material and backdrop textures."""
    rng = np.random.default_rng(_BANK_SEED)
    ground = _mip_chain(_ground_tile(rng))
    materials = [_mip_chain(_material_tile(rng, k)) for k in range(MATERIAL_COUNT)]
    backdrop = _backdrop(rng)
    flat = ground + [level for chain in materials for level in chain]
    pad = ATLAS_PAD
    padded = [
        np.asarray(cv2.copyMakeBorder(img, pad, pad, pad, pad, cv2.BORDER_WRAP), dtype=np.uint8)
        for img in flat
    ]
    atlas, corners = _pack(padded)
    origins = np.array(corners, dtype=np.float64) + ATLAS_PAD - 0.5
    n_ground = len(ground)
    n_mat = len(materials[0])
    mat = origins[n_ground:].reshape(MATERIAL_COUNT, n_mat, 2)
    atlas.setflags(write=False)
    backdrop.setflags(write=False)
    return TextureBank(
        atlas=atlas,
        ground_origin_x=origins[:n_ground, 0].copy(),
        ground_origin_y=origins[:n_ground, 1].copy(),
        material_origin_x=np.ascontiguousarray(mat[:, :, 0]),
        material_origin_y=np.ascontiguousarray(mat[:, :, 1]),
        backdrop=backdrop,
    )

"""Scene families unlike the procedural world, panned at several speeds, generated in code.

Why: the CPU descriptor was first calibrated on procedural-world clips only, and on a slow,
clean turn in a plainly textured room it flagged steady motion as mutations. Its
threshold is only trustworthy if clean motion stays under it on content it was not tuned on:
plain noise textures, large flat colours, high-frequency detail and outdoor-like gradients.

Each scene is a horizontally periodic panorama (``PANO_W`` × ``H``, seeded, its palette drawn
from the seed so that two seeds of one family are two different places); a clip is a camera
turning across it at a constant rate (``SPEEDS``, degrees per second at 16 fps and WorldMark's
70° field of view), optionally drifting vertically a little. Frames are 640×432 crops with
sub-pixel offsets (bilinear), so adjacent frames differ the way a smooth turn does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Protocol

import cv2
import numpy as np
import numpy.typing as npt

from streameval.constants import ANALYSIS_HEIGHT, ANALYSIS_WIDTH, FOV_DEG
from streameval.core.arrays import Image


class Embedder(Protocol):
    """What the measurements need of an embedding backend."""

    def embed(self, images: Sequence[npt.NDArray[np.uint8]]) -> npt.NDArray[np.float32]: ...


W, H = ANALYSIS_WIDTH, ANALYSIS_HEIGHT
PANO_W = 4096  # a power of two: FFT noise is periodic, so the turn wraps without a seam
PANO_H = H + 64  # room for the vertical drift
FPS = 16.0
PX_PER_DEG = W / FOV_DEG  # small-angle pan: ≈ 9.1 analysis pixels per degree
SPEEDS: dict[str, float] = {"slow": 15.0, "normal": 45.0, "fast": 90.0}  # degrees per second
"""Turn rates: the procedural world turns at 45°/s; 15°/s is a slow look around, 90°/s a fast
whip (51 px per frame, 411 px between Local Memory's samples, 0.5 s apart)."""


def _palette(rng: np.random.Generator, n: int) -> npt.NDArray[np.float64]:
    """``n`` RGB colours around one seeded hue: a place has a colour scheme, not all colours."""
    base = rng.uniform(0, 180)
    hues = (base + rng.normal(0, 18, n)) % 180
    sats = rng.uniform(60, 230, n)
    vals = rng.uniform(60, 240, n)
    hsv = np.stack([hues, sats, vals], axis=1).astype(np.uint8)[None]
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)[0].astype(np.float64)


def _fft_noise(
    rng: np.random.Generator, shape: tuple[int, int], lo: float, hi: float
) -> npt.NDArray[np.float64]:
    """Band-limited noise (spatial frequencies lo..hi cycles/px), periodic, scaled to [0, 1]."""
    fy = np.fft.fftfreq(shape[0])[:, None]
    fx = np.fft.rfftfreq(shape[1])[None, :]
    f = np.hypot(fy, fx)
    mask = (f >= lo) & (f <= hi)
    spec = (rng.standard_normal(f.shape) + 1j * rng.standard_normal(f.shape)) * mask
    out = np.fft.irfft2(spec, s=shape)
    out -= out.min()
    return out / max(float(out.max()), 1e-12)


def _mix(t: npt.NDArray[np.float64], pal: npt.NDArray[np.float64]) -> Image:
    """Map t in [0, 1] through the palette's colours (piecewise linear)."""
    xs = np.linspace(0.0, 1.0, len(pal))
    rgb = np.stack([np.interp(t, xs, pal[:, c]) for c in range(3)], axis=-1)
    return np.clip(rgb, 0, 255).astype(np.uint8)


def noise_texture(seed: int) -> Image:
    """Plain noise texture: a plastered wall or carpet, mid-frequency noise in 3–4 colours."""
    rng = np.random.default_rng(seed)
    t = _fft_noise(rng, (PANO_H, PANO_W), 0.004, 0.05)
    return _mix(t, _palette(rng, 4))


def flat_colours(seed: int) -> Image:
    """Large flat colours: a plain room, walls 30–110° wide in the room's 3 wall colours over
    one floor colour, a few flat panels (doors, pictures); every region one colour."""
    rng = np.random.default_rng(seed)
    pal = _palette(rng, 5)
    walls, floor, panels = pal[:3], pal[3], pal[3:]
    img = np.empty((PANO_H, PANO_W, 3), np.uint8)
    x = 0
    while x < PANO_W:
        w = int(rng.integers(280, 1000))
        img[:, x : x + w] = walls[rng.integers(len(walls))]
        x += w
    img[int(PANO_H * rng.uniform(0.6, 0.75)) :] = floor
    for _ in range(8):
        x0, y0 = int(rng.integers(0, PANO_W - 200)), int(rng.integers(40, PANO_H // 2))
        h, w = int(rng.integers(60, 200)), int(rng.integers(60, 200))
        img[y0 : y0 + h, x0 : x0 + w] = panels[rng.integers(len(panels))]
    return img


def high_frequency(seed: int) -> Image:
    """High-frequency detail everywhere: fine grain over 2–8 px stripes whose angle drifts
    across the panorama, in seeded colours (gravel, fabric, foliage-like detail)."""
    rng = np.random.default_rng(seed)
    grain = _fft_noise(rng, (PANO_H, PANO_W), 0.15, 0.5)
    yy, xx = np.mgrid[0:PANO_H, 0:PANO_W].astype(np.float64)
    period = float(rng.choice([4.0, 6.0, 8.0]))
    angle = 0.6 * np.sin(2 * np.pi * xx / PANO_W + rng.uniform(0, 6.3))
    stripes = 0.5 + 0.5 * np.sin(2 * np.pi * (xx * np.cos(angle) + yy * np.sin(angle)) / period)
    t = 0.55 * grain + 0.45 * stripes
    return _mix(t, _palette(rng, 3))


def outdoor_gradients(seed: int) -> Image:
    """Outdoor-like: a sky gradient, hills on a periodic horizon, a graded field, a sun glow."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:PANO_H, 0:PANO_W].astype(np.float64)
    sky_top, sky_low = _palette(rng, 2)
    ground_near, ground_far = _palette(rng, 2)
    horizon = PANO_H * rng.uniform(0.4, 0.6)
    hills = sum(
        rng.uniform(5, 35) * np.sin(2 * np.pi * k * xx[0] / PANO_W + rng.uniform(0, 6.3))
        for k in (1, 3, 7, 13)
    )
    line = horizon - np.abs(hills)
    ts = np.clip(yy / horizon, 0, 1)[..., None]
    sky = sky_top * (1 - ts) + sky_low * ts
    tg = np.clip((yy - line[None, :]) / (PANO_H - line[None, :]), 0, 1)[..., None]
    ground = ground_far * (1 - tg) + ground_near * tg
    grass = _fft_noise(rng, (PANO_H, PANO_W), 0.02, 0.2)[..., None]
    ground = ground * (0.85 + 0.3 * grass)
    sun_x = rng.uniform(0, PANO_W)
    dx = np.minimum(np.abs(xx - sun_x), PANO_W - np.abs(xx - sun_x))
    glow = 120 * np.exp(-(dx**2 + (yy - 0.3 * horizon) ** 2) / (2 * 90.0**2))[..., None]
    img = np.where((yy < line[None, :])[..., None], sky + glow, ground)
    return np.clip(img, 0, 255).astype(np.uint8)


FAMILIES: dict[str, Callable[[int], Image]] = {
    "noise": noise_texture,
    "flat": flat_colours,
    "hifreq": high_frequency,
    "outdoor": outdoor_gradients,
}


@cache
def panorama(family: str, seed: int) -> Image:
    """The seeded panorama of one family (cached: the generators take ~0.1–0.5 s)."""
    return FAMILIES[family](seed)


def crop(pano: Image, x: float, y: float) -> Image:
    """The W×H view at sub-pixel offset (x, y), wrapping horizontally (bilinear)."""
    x0 = int(np.floor(x)) % PANO_W
    strip = np.take(pano, np.arange(x0, x0 + W + 1) % PANO_W, axis=1)
    m = np.float32([[1, 0, -(x - np.floor(x))], [0, 1, -y]])
    return cv2.warpAffine(strip, m, (W, H), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)


def turn(family: str, seed: int, speed: str, frames: int, *, start: float = 0.0) -> list[Image]:
    """A clean turn across the panorama at ``SPEEDS[speed]``, with a slow vertical bob (a
    handheld look around), ``frames`` frames at 16 fps."""
    pano = panorama(family, seed)
    step = SPEEDS[speed] * PX_PER_DEG / FPS
    return [
        crop(pano, start + k * step, 32.0 + 20.0 * np.sin(2 * np.pi * k / (4 * FPS)))
        for k in range(frames)
    ]


# --- measurements shared by the calibration test and bench/descriptor_calibration.py -------

SAMPLE_GAP = 8  # Local Memory samples a constant-rate turn every δ = 0.5 s of motion: 8 frames
CLIP_FRAMES = 64  # 4 s of turning per clip
SEEDS = (0, 1, 2)


def embed_turn(backend: Embedder, family: str, seed: int, speed: str) -> npt.NDArray[np.float64]:
    """The backend's rows for one clean turn (float64, for exact dot products)."""
    return backend.embed(turn(family, seed, speed, CLIP_FRAMES)).astype(np.float64)


def adjacent_sample_distances(rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``1 − cos`` between every frame and the one Local Memory samples after it."""
    return 1.0 - np.einsum("ij,ij->i", rows[:-SAMPLE_GAP], rows[SAMPLE_GAP:])


def clean_distances(backend: Embedder) -> dict[tuple[str, str], npt.NDArray[np.float64]]:
    """Adjacent-sample distances of clean turns, per (family, speed), over ``SEEDS``."""
    return {
        (family, speed): np.concatenate(
            [adjacent_sample_distances(embed_turn(backend, family, s, speed)) for s in SEEDS]
        )
        for family in FAMILIES
        for speed in SPEEDS
    }


def mutation_distances(backend: Embedder) -> dict[str, npt.NDArray[np.float64]]:
    """Distances at real mutations between two views of the ``normal`` turn's first frames:
    ``swap`` (same family, another seed: another place of the same kind), ``cut`` (another
    family), and ``procedural_cut`` (the procedural world's hard-cut defect at its cut frames)."""
    from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

    views = {
        (f, s): backend.embed([turn(f, s, "normal", 1)[0]]).astype(np.float64)[0]
        for f in FAMILIES
        for s in SEEDS
    }
    swap, cut = [], []
    for (f, s), x in views.items():
        for (g, t), y in views.items():
            if (f, s) < (g, t):
                (swap if f == g else cut).append(1.0 - float(x @ y))
    world = ProceduralWorld(world_config_for_defect("hard_cut"))
    frames = [world.step(k).image for k in "W" * 88 + "R" * 88 + "D" * 8]  # cuts at 80, 160
    rows = backend.embed(frames).astype(np.float64)
    at_cut = [1.0 - float(rows[c - 1] @ rows[c]) for c in (80, 160)]
    at_cut += [
        1.0 - float(rows[c - SAMPLE_GAP // 2] @ rows[c + SAMPLE_GAP // 2]) for c in (80, 160)
    ]
    return {"swap": np.array(swap), "cut": np.array(cut), "procedural_cut": np.array(at_cut)}


def summary(d: npt.NDArray[np.float64]) -> tuple[float, float, float]:
    """(p50, p95, max) of a distance sample."""
    return float(np.median(d)), float(np.percentile(d, 95)), float(np.max(d))

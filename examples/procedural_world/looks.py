"""Looks: the palette and lighting of one shot, which the ``hard_cut`` defect switches.

Why: a hard cut in a world model's output is an abrupt change of *scene*. Teleporting the
camera alone kept everything global (the same sky, the same earth-and-moss ground, the same
sun), and at the 48×27 input of TransNetV2 two far-apart crossings of the town looked like the
same shot (p ≈ 0.41–0.47 < 0.5, the cut was missed). So every cut also switches the look:
a colour matrix each for the ground texels, the object-material texels and the backdrop
panorama (hue turned about the grey axis, saturation, gain), and the sun's direction and the
ambient/diffuse split of the object shading.

Looks are drawn per cut from (seed, cut number), so they are deterministic; look 0
(``CLEAN_LOOK``: identity colours, the clean world's sun) is what every frame before the first
cut, and every world without hard cuts, renders with — bit-identical to a world without looks.
The base hue of cut k is turned by k × 137.5° (the golden angle) ± 15°, so the base hues of
two consecutive looks are ≥ 107° apart (the first is as far from look 0), while the three
parts of one look stay within ±25° of their base: one coherent palette per shot.

Measured (89 cuts: seeds 0–9, every key, cuts every 5 s or 2 s): TransNetV2 p = 0.70–0.99 on
the last frame before each cut and ≤ 0.005 on every other frame (threshold 0.5), so it and
scenedetect-adaptive find every cut at its frame and nothing else; the CPU embedding's
adjacent-frame distance 1 − cos is 0.88–1.03 across a cut, ≤ 0.04 elsewhere (TAU_MUT 0.10).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
from streameval.worlds.procedural_world.textures import ATLAS_PAD, GROUND_TILE, TextureBank

from streameval.core.arrays import Image

Matrix3 = tuple[float, float, float, float, float, float, float, float, float]

SUN = (0.55, -0.35)
"""Horizontal direction toward the light (x, z) of the clean world."""
CLEAN_AMBIENT = 0.62
CLEAN_DIFFUSE = 0.38
"""Object shade = ambient + diffuse · max(n · sun, 0) in the clean world."""

GOLDEN_ANGLE_DEG = 137.5
"""Base-hue step from one cut's look to the next."""
HUE_JITTER_DEG = 15.0
"""Jitter of a look's base hue (consecutive base hues are ≥ 137.5° − 2 · 15° apart) ..."""
PART_HUE_SPREAD_DEG = 25.0
"""... and of its ground, material and backdrop hues around that base."""
SATURATION_RANGE = (0.55, 1.6)
GAIN_RANGE = (0.7, 1.15)
"""Exposure of a look (multiplies every part; each part also varies by ±10 %)."""
AMBIENT_RANGE = (0.35, 0.75)
"""Ambient share of the object shading in a cut's look (the rest is diffuse sunlight)."""

_IDENTITY: Matrix3 = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
_LUMA = np.array([0.299, 0.587, 0.114])  # Rec. 601: the saturation matrix keeps this luma
_LOOK_STREAM = 0x100C


@dataclass(frozen=True, slots=True)
class Look:
    """Palette and lighting of one shot. ``index`` is the number of hard cuts so far (0 = the
    clean look). Matrices are row-major 3×3 on RGB in [0, 255] (tuples, so a look is hashable
    and can key the cache of recoloured textures)."""

    index: int
    ground: Matrix3
    material: Matrix3
    backdrop: Matrix3
    sun: tuple[float, float]
    ambient: float
    diffuse: float

    @property
    def recolours(self) -> bool:
        """Whether any texture changes colour (False for the clean look: no recolouring,
        the shared texture bank is used as is)."""
        return any(m != _IDENTITY for m in (self.ground, self.material, self.backdrop))


CLEAN_LOOK = Look(
    index=0,
    ground=_IDENTITY,
    material=_IDENTITY,
    backdrop=_IDENTITY,
    sun=SUN,
    ambient=CLEAN_AMBIENT,
    diffuse=CLEAN_DIFFUSE,
)


def palette_matrix(hue_deg: float, saturation: float, gain: float) -> Matrix3:
    """``gain · R(hue) · S(saturation)``: S scales the chroma around Rec. 601 luma (1 = no
    change, 0 = grey), R turns the hue about the grey axis (1, 1, 1) (Rodrigues' formula:
    grey stays grey)."""
    s = saturation * np.eye(3) + (1.0 - saturation) * np.outer(np.ones(3), _LUMA)
    theta = math.radians(hue_deg)
    a = np.full(3, 1.0 / math.sqrt(3.0))
    cross = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    r = math.cos(theta) * np.eye(3) + (1.0 - math.cos(theta)) * np.outer(a, a)
    r += math.sin(theta) * cross
    m = gain * (r @ s)
    return tuple(float(v) for v in m.ravel())  # type: ignore[return-value]


def look_for_cut(seed: int, cut: int) -> Look:
    """The look after the ``cut``-th hard cut (1-based) of world ``seed``; 0 gives CLEAN_LOOK."""
    if cut < 0:
        raise ValueError(f"cut must be >= 0, got {cut}")
    if cut == 0:
        return CLEAN_LOOK
    rng = np.random.default_rng([seed, cut, _LOOK_STREAM])
    base = cut * GOLDEN_ANGLE_DEG + rng.uniform(-HUE_JITTER_DEG, HUE_JITTER_DEG)
    exposure = rng.uniform(*GAIN_RANGE)
    parts = [
        palette_matrix(
            hue_deg=base + rng.uniform(-PART_HUE_SPREAD_DEG, PART_HUE_SPREAD_DEG),
            saturation=rng.uniform(*SATURATION_RANGE),
            gain=exposure * rng.uniform(0.9, 1.1),
        )
        for _ in range(3)
    ]
    azimuth = rng.uniform(0.0, 2.0 * math.pi)
    ambient = float(rng.uniform(*AMBIENT_RANGE))
    return Look(
        index=cut,
        ground=parts[0],
        material=parts[1],
        backdrop=parts[2],
        sun=(math.cos(azimuth), math.sin(azimuth)),
        ambient=ambient,
        diffuse=1.0 - ambient,
    )


@dataclass(frozen=True, slots=True)
class LookTextures:
    """The texture atlas and the padded backdrop panorama as one look colours them."""

    atlas: Image
    backdrop_padded: Image


def _transform(image: Image, matrix: Matrix3) -> Image:
    m = np.asarray(matrix, dtype=np.float32).reshape(3, 3)
    out: Image = np.asarray(cv2.transform(image, m), dtype=np.uint8)  # saturates to 0..255
    return out


def look_textures(bank: TextureBank, backdrop_padded: Image, look: Look) -> LookTextures:
    """Recolour the atlas (ground entries with ``look.ground``, everything else — the object
    materials — with ``look.material``) and the padded backdrop with ``look.backdrop``.

    A few milliseconds; the renderer keeps the current look's result, so this runs once per
    cut. The ground entries are found from their mip origins: level L is a (GROUND_TILE >> L)²
    tile inside an ATLAS_PAD border.
    """
    atlas = _transform(bank.atlas, look.material)
    for level in range(bank.ground_levels):
        side = (GROUND_TILE >> level) + 2 * ATLAS_PAD
        x0 = round(bank.ground_origin_x[level] + 0.5) - ATLAS_PAD
        y0 = round(bank.ground_origin_y[level] + 0.5) - ATLAS_PAD
        block = np.ascontiguousarray(bank.atlas[y0 : y0 + side, x0 : x0 + side])
        atlas[y0 : y0 + side, x0 : x0 + side] = _transform(block, look.ground)
    atlas.setflags(write=False)
    backdrop = _transform(backdrop_padded, look.backdrop)
    backdrop.setflags(write=False)
    return LookTextures(atlas=atlas, backdrop_padded=backdrop)

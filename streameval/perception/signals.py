"""Per-frame flow signals Sx and Srad (SPEC §2, seed 000 flow_eval).

Sx = mean horizontal flow (positive: content moves right, as under A and L);
Srad = mean of u·rx + v·ry with (rx, ry) the unit vector from the **image centre** to the
pixel (the focus of expansion is not estimated), positive under W.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt


@lru_cache(maxsize=8)
def radial_field(height: int, width: int) -> npt.NDArray[np.float64]:
    """(H, W, 2) unit vectors pointing away from the image centre ((W−1)/2, (H−1)/2).

    Read-only and cached: built once per analysis size, then one dot product per frame.
    """
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64)
    dx = xs - (width - 1) / 2.0
    dy = ys - (height - 1) / 2.0
    norm = np.hypot(dx, dy)
    norm[norm == 0] = 1.0  # the exact centre pixel (odd sizes) has no direction: weight 0
    field = np.stack([dx / norm, dy / norm], axis=-1)
    field.setflags(write=False)
    return field


def flow_signals(flow: npt.NDArray[np.float32]) -> tuple[float, float]:
    """(Sx, Srad) of one dense flow field (H, W, 2).

    Accumulated in float64 so the value does not depend on the frame size's float32
    rounding; this is the hot path (one call per frame), hence a single dot product for Srad.
    """
    h, w, _ = flow.shape
    n = h * w
    flat = flow.reshape(-1, 2)
    sx = float(np.sum(flat[:, 0], dtype=np.float64)) / n
    rad = radial_field(h, w).reshape(-1)
    srad = float(np.dot(flow.reshape(-1).astype(np.float64), rad)) / n
    return sx, srad


def naive_flow_signals(flow: npt.NDArray[np.float32]) -> tuple[float, float]:
    """Reference implementation with explicit per-pixel vectors (tests only use this)."""
    h, w, _ = flow.shape
    u = flow[..., 0].astype(np.float64)
    v = flow[..., 1].astype(np.float64)
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    dx, dy = xs - (w - 1) / 2.0, ys - (h - 1) / 2.0
    r = np.hypot(dx, dy)
    r[r == 0] = 1.0
    return float(u.mean()), float((u * dx / r + v * dy / r).mean())

"""Per-frame flow signals Sx and Srad (docs/methods.md#analysis-frame-and-flow-units).

Sx = mean horizontal flow (positive: content moves right, as under A and L);
Srad = mean of u·rx + v·ry with (rx, ry) the unit vector from the **image centre** to the
pixel (the focus of expansion is not estimated), positive under W. The field is the reference's
``compute_signals``: centre (W/2, H/2), ``r = (x − W/2, y − H/2) / (‖·‖ + 1e-6)``.
"""

from __future__ import annotations

from functools import lru_cache

import cv2
import numpy as np
import numpy.typing as npt


@lru_cache(maxsize=8)
def radial_field(height: int, width: int) -> npt.NDArray[np.float64]:
    """(H, W, 2) unit vectors pointing away from the image centre (W/2, H/2), as the reference.

    ``(x − W/2, y − H/2) / (hypot + 1e-6)``: the pixel at the centre gets weight 0. Read-only and
    cached: built once per analysis size, then one dot product per frame.
    """
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64)
    dx = xs - width / 2.0
    dy = ys - height / 2.0
    norm = np.hypot(dx, dy) + 1e-6
    field = np.stack([dx / norm, dy / norm], axis=-1)
    field.setflags(write=False)
    return field


@lru_cache(maxsize=8)
def _radial_field32(height: int, width: int) -> npt.NDArray[np.float32]:
    field = radial_field(height, width).astype(np.float32)
    field.setflags(write=False)
    return field


def flow_signals(
    flow: npt.NDArray[np.float32], scratch: npt.NDArray[np.float32] | None = None
) -> tuple[float, float]:
    """(Sx, Srad) of one dense flow field (H, W, 2).

    The hot path (one call per frame): OpenCV's ``mean`` sums in float64 on one thread, so the
    value is deterministic and needs no float64 copy of the field; the products u·rx, v·ry are
    float32 (relative error ~1e-7, far below flow noise). No BLAS: OpenBLAS's threads spun on
    the second core, and its summation order would depend on the machine's core count.
    ``scratch`` (same shape and dtype as ``flow``) avoids a 2 MB allocation per frame.
    """
    h, w, _ = flow.shape
    products = cv2.multiply(flow, _radial_field32(h, w), dst=scratch)
    sx = float(cv2.mean(flow)[0])
    mean_rad = cv2.mean(products)
    return sx, float(mean_rad[0]) + float(mean_rad[1])


def naive_flow_signals(flow: npt.NDArray[np.float32]) -> tuple[float, float]:
    """Reference implementation with explicit per-pixel vectors (tests only use this)."""
    h, w, _ = flow.shape
    u = flow[..., 0].astype(np.float64)
    v = flow[..., 1].astype(np.float64)
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    dx, dy = xs - w / 2.0, ys - h / 2.0
    r = np.hypot(dx, dy) + 1e-6
    return float(u.mean()), float((u * dx / r + v * dy / r).mean())

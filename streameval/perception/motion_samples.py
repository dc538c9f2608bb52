"""Motion-type samples (docs/methods.md#motion-type-fit): the perception side of the strafe/turn
fit.

Per sampled frame (``streameval.metrics.fits.motion_type.fit_frames``), the flow on a coarse
grid and invZ when depth exists; the fit itself is scoring-time work in
``streameval.metrics.fits`` (no OpenCV), so ``rescore`` needs no video.
"""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

from streameval.constants import FIT_PIXEL_STEP, MIN_DEPTH
from streameval.metrics.fits.motion_type import FitSample

F32 = npt.NDArray[np.float32]

# Depth-free grid: flow averaged over 4×4 blocks, then every FIT_PIXEL_STEP-th block, i.e. the
# same point density the depth path gets from a quarter-resolution depth map.
FLOWGRID_DOWNSAMPLE = 4
# Depth-free grid points closer to the frame's edge than two grid steps (48 analysis pixels), at
# either end of their flow, carry no sample: content there enters or leaves the view and its
# flow is extrapolated, a residual a pure turn would read as parallax (clean yaw on the
# procedural world: p_yaw 0.954 with one step, 0.963 with two, 0.968 with three).
FIT_BORDER_PX = 2 * FLOWGRID_DOWNSAMPLE * FIT_PIXEL_STEP
# Above this median displacement (analysis pixels per signal pair, i.e. two frames) a
# depth-free fit frame is sampled from the one-frame pair instead, doubled: DIS (fast) loses
# fine, foreshortened texture at ~30 px (an OpenGL room's floor read a 35 px turn as −25 px),
# and holds at ~15 px (docs/methods.md#motion-type-fit).
FIT_SHORT_PAIR_PX = 12.0


def _grid_coords(height: int, width: int, scale_x: float, scale_y: float) -> tuple[F32, F32]:
    ys, xs = np.mgrid[0:height:FIT_PIXEL_STEP, 0:width:FIT_PIXEL_STEP].astype(np.float64)
    # Centre of destination pixel j in source coordinates: (j + 0.5)·scale − 0.5.
    x = (xs + 0.5) * scale_x - 0.5
    y = (ys + 0.5) * scale_y - 0.5
    return x.astype(np.float32), y.astype(np.float32)


def raster_sample(
    depth: npt.NDArray[np.floating], u: npt.NDArray[np.floating]
) -> tuple[npt.NDArray[np.floating], npt.NDArray[np.floating]]:
    """``invZ = 1/max(depth, 1e-3)`` and u at every 6th element of the row-major flattened maps.

    This is the reference's sampling (docs/methods.md#departures-from-the-reference): a stride over
    the flattened map, not a 2-D
    grid, so the sampled columns shift from row to row when the width is not a multiple of 6.
    The dtype of the inputs is kept (the reference computes invZ in the depth's own dtype).
    """
    if depth.shape != u.shape:
        raise ValueError(f"depth {depth.shape} and u {u.shape} must have the same shape")
    invz = 1.0 / np.maximum(depth, np.asarray(MIN_DEPTH, dtype=depth.dtype))
    return invz.reshape(-1)[::FIT_PIXEL_STEP], u.reshape(-1)[::FIT_PIXEL_STEP]


def sample_fit(frame: int, flow: F32, depth: F32 | None) -> FitSample:
    """Samples of ``flow`` (H, W, 2) at ``frame`` for the motion-type fit.

    With depth: flow resized to the depth map (bilinear, as the reference resizes u), every
    6th element of the flattened map (``raster_sample``). Without: flow block-averaged to a
    quarter size, every 6th block of a 2-D grid (our depth-free estimator needs x and y), NaN
    where the point or its flow's end lies within ``FIT_BORDER_PX`` of the frame's edge.
    """
    h_a, w_a, _ = flow.shape
    cx, cy = (w_a - 1) / 2.0, (h_a - 1) / 2.0
    if depth is not None:
        h, w = depth.shape
        small = cv2.resize(flow, (w, h), interpolation=cv2.INTER_LINEAR)
        invz, u = raster_sample(depth.astype(np.float32), np.asarray(small[..., 0], np.float32))
        idx = np.arange(0, h * w, FIT_PIXEL_STEP)
        x = ((idx % w + 0.5) * (w_a / w) - 0.5).astype(np.float32)
        y = ((idx // w + 0.5) * (h_a / h) - 0.5).astype(np.float32)
        return FitSample(
            frame=frame,
            x=(x - cx).astype(np.float32),
            y=(y - cy).astype(np.float32),
            u=np.ascontiguousarray(u, dtype=np.float32),
            v=np.ascontiguousarray(small[..., 1].reshape(-1)[::FIT_PIXEL_STEP], np.float32),
            invz=np.ascontiguousarray(invz, dtype=np.float32),
        )
    h, w = h_a // FLOWGRID_DOWNSAMPLE, w_a // FLOWGRID_DOWNSAMPLE
    small = cv2.resize(flow, (w, h), interpolation=cv2.INTER_AREA)
    grid = small[::FIT_PIXEL_STEP, ::FIT_PIXEL_STEP]
    gx, gy = _grid_coords(h, w, w_a / w, h_a / h)
    u = np.array(grid[..., 0], dtype=np.float32)
    v = np.array(grid[..., 1], dtype=np.float32)
    inside = _inside(gx, w_a) & _inside(gx + u, w_a) & _inside(gy, h_a) & _inside(gy + v, h_a)
    u[~inside] = np.nan
    v[~inside] = np.nan
    return FitSample(
        frame=frame,
        x=(gx - cx).reshape(-1).astype(np.float32),
        y=(gy - cy).reshape(-1).astype(np.float32),
        u=u.reshape(-1),
        v=v.reshape(-1),
        invz=None,
    )


def _inside(coord: F32, size: int) -> npt.NDArray[np.bool_]:
    return (coord >= FIT_BORDER_PX) & (coord <= size - 1 - FIT_BORDER_PX)


def needs_short_pair(flow: F32) -> bool:
    """Whether a depth-free fit frame should be sampled from its one-frame pair: the signal
    pair's median displacement exceeds ``FIT_SHORT_PAIR_PX`` (read on every 8th pixel)."""
    sub = flow[::8, ::8]
    return float(np.median(np.hypot(sub[..., 0], sub[..., 1]))) > FIT_SHORT_PAIR_PX

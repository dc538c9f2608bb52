"""Motion-type samples (SPEC §3): the perception side of the strafe/turn fit.

Per sampled frame (``streameval.fits.motion_type.fit_frames``), the flow on a coarse grid and
invZ when depth exists; the fit itself is scoring-time work in ``streameval.fits`` (no OpenCV),
so ``rescore`` needs no video.
"""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

from streameval.constants import FIT_PIXEL_STEP, MIN_DEPTH
from streameval.fits.motion_type import FitSample

F32 = npt.NDArray[np.float32]

# Depth-free grid: flow averaged over 4×4 blocks, then every FIT_PIXEL_STEP-th block, i.e. the
# same point density the depth path gets from a quarter-resolution depth map.
FLOWGRID_DOWNSAMPLE = 4


def _grid_coords(height: int, width: int, scale_x: float, scale_y: float) -> tuple[F32, F32]:
    ys, xs = np.mgrid[0:height:FIT_PIXEL_STEP, 0:width:FIT_PIXEL_STEP].astype(np.float64)
    # Centre of destination pixel j in source coordinates: (j + 0.5)·scale − 0.5.
    x = (xs + 0.5) * scale_x - 0.5
    y = (ys + 0.5) * scale_y - 0.5
    return x.astype(np.float32), y.astype(np.float32)


def sample_fit(frame: int, flow: F32, depth: F32 | None) -> FitSample:
    """Grid samples of ``flow`` (H, W, 2) at ``frame`` for the motion-type fit.

    With depth: flow resized to the depth map (bilinear, as the reference resizes u), every
    6th pixel. Without: flow block-averaged to a quarter size, every 6th block.
    """
    h_a, w_a, _ = flow.shape
    if depth is not None:
        h, w = depth.shape
        small = cv2.resize(flow, (w, h), interpolation=cv2.INTER_LINEAR)
        z = np.maximum(depth[::FIT_PIXEL_STEP, ::FIT_PIXEL_STEP].astype(np.float64), MIN_DEPTH)
        invz: F32 | None = (1.0 / z).astype(np.float32).reshape(-1)
    else:
        h, w = h_a // FLOWGRID_DOWNSAMPLE, w_a // FLOWGRID_DOWNSAMPLE
        small = cv2.resize(flow, (w, h), interpolation=cv2.INTER_AREA)
        invz = None
    grid = small[::FIT_PIXEL_STEP, ::FIT_PIXEL_STEP]
    x, y = _grid_coords(h, w, w_a / w, h_a / h)
    cx, cy = (w_a - 1) / 2.0, (h_a - 1) / 2.0
    return FitSample(
        frame=frame,
        x=(x - cx).reshape(-1).astype(np.float32),
        y=(y - cy).reshape(-1).astype(np.float32),
        u=np.ascontiguousarray(grid[..., 0], dtype=np.float32).reshape(-1),
        v=np.ascontiguousarray(grid[..., 1], dtype=np.float32).reshape(-1),
        invz=invz,
    )

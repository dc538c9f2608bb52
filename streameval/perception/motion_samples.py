"""Motion-type samples (docs/methods.md#motion-type-fit): the perception side of the strafe/turn
fit.

Per sampled frame (``streameval.metrics.fits.motion_type.fit_frames``), the flow on a coarse
grid and invZ when depth exists; the fit itself is scoring-time work in
``streameval.metrics.fits`` (no OpenCV), so ``rescore`` needs no video.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import cv2
import numpy as np
import numpy.typing as npt

from streameval.constants import FIT_PIXEL_STEP, MIN_DEPTH, MOTION_FLOOR_PX
from streameval.core.arrays import F32
from streameval.core.episode.motion import FitSample
from streameval.metrics.fits.motion_type import analysis_focal, rotation_flow, rotation_rate
from streameval.perception.analysis import rgb_to_gray

Texture = tuple[F32, F32]  # horizontal and vertical gradient energy at the depth-free grid

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
# Gradient energy (mean squared Sobel gradient, grey levels per pixel, over a grid point's 4×4
# block) under which a flow component is not measured at all, even in a mostly flat image: the
# OpenGL room's flat-colour walls, where DIS fills the flow in from the edges (clean strafe
# p_trans 0.61 without it, 0.92 with it; textured scenes sit at 0.5-10 and are unchanged).
FIT_TEXTURE_FLOOR = 0.2


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


def sample_fit(
    frame: int,
    flow: F32,
    depth: F32 | None,
    *,
    derotated: bool = False,
    texture: Texture | None = None,
) -> FitSample:
    """Samples of ``flow`` (H, W, 2) at ``frame`` for the motion-type fit.

    With depth: flow resized to the depth map (bilinear, as the reference resizes u), every
    6th element of the flattened map (``raster_sample``). Without: flow block-averaged to a
    quarter size, every 6th block of a 2-D grid (our depth-free estimator needs x and y), NaN
    where the point or its flow's end lies within ``FIT_BORDER_PX`` of the frame's edge; with
    ``texture`` (``texture_grid`` of the pair's first frame), u is also NaN where the image has
    less horizontal gradient than at the median grid point (or than ``FIT_TEXTURE_FLOOR``), and
    v where it has less vertical gradient: a flow component is only measured along an image
    gradient (the aperture problem), and DIS fills the rest in from its neighbours.
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
    if texture is not None and inside.any():
        # docs/methods.md#motion-type-fit, "Texture": each component on the better-textured
        # half of the grid along its own axis (points at the median are kept), never where the
        # image is flat along it
        for comp, grad in ((u, texture[0]), (v, texture[1])):
            keep_from = max(float(np.median(grad[inside])), FIT_TEXTURE_FLOOR)
            comp[inside & (grad < keep_from)] = np.nan
    return FitSample(
        frame=frame,
        x=(gx - cx).reshape(-1).astype(np.float32),
        y=(gy - cy).reshape(-1).astype(np.float32),
        u=u.reshape(-1),
        v=v.reshape(-1),
        invz=None,
        derotated=derotated,
    )


def texture_grid(image: npt.NDArray[np.uint8]) -> Texture:
    """Mean squared horizontal and vertical intensity gradient (Sobel, grey levels per pixel)
    over each 4×4 block of the depth-free grid, at the grid's points: where a flow component
    can be measured (``sample_fit``'s ``texture``)."""
    gray = image if image.ndim == 2 else rgb_to_gray(image)
    g = gray.astype(np.float32)
    h, w = g.shape[0] // FLOWGRID_DOWNSAMPLE, g.shape[1] // FLOWGRID_DOWNSAMPLE
    out: list[F32] = []
    for dx, dy in ((1, 0), (0, 1)):
        grad = cv2.Sobel(g, cv2.CV_32F, dx, dy, ksize=3) / 8.0
        energy = np.asarray(grad * grad, dtype=np.float32)
        block = cv2.resize(energy, (w, h), interpolation=cv2.INTER_AREA)
        out.append(np.asarray(block[::FIT_PIXEL_STEP, ::FIT_PIXEL_STEP], np.float32))
    return out[0], out[1]


def _inside(coord: F32, size: int) -> npt.NDArray[np.bool_]:
    return (coord >= FIT_BORDER_PX) & (coord <= size - 1 - FIT_BORDER_PX)


def needs_short_pair(flow: F32) -> bool:
    """Whether a depth-free fit frame should be sampled from its one-frame pair: the signal
    pair's median displacement exceeds ``FIT_SHORT_PAIR_PX`` (read on every 8th pixel)."""
    sub = flow[::8, ::8]
    return float(np.median(np.hypot(sub[..., 0], sub[..., 1]))) > FIT_SHORT_PAIR_PX


@lru_cache(maxsize=4)
def _pixel_offsets(height: int, width: int) -> tuple[npt.NDArray[np.float64], ...]:
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64)
    return xs - (width - 1) / 2.0, ys - (height - 1) / 2.0


def derotated_flow(
    flow_fn: Callable[[npt.NDArray[np.uint8], npt.NDArray[np.uint8]], F32],
    prev: npt.NDArray[np.uint8],
    nxt: npt.NDArray[np.uint8],
    flow: F32,
    texture: Texture | None = None,
) -> F32:
    """The flow of ``prev → nxt`` as its turn field plus what is left once the turn is warped
    out of the pair (docs/methods.md#motion-type-fit, "Derotation").

    Why: a pure turn has a depth-free field the depth-free fit removes, but DIS measures that
    field with an error that grows with the displacement and is not random: on the procedural
    world's ground it reads the turn's ``x²/f`` part up to a quarter short at the frame's lower
    corners (0.35 px of a 6 px flow), and the fit read that bowl as parallax (clean 4.5 °/s
    yaw: p_yaw 0.955). So ω is read from ``flow``'s vertical component on the fit's grid
    (``rotation_rate``, on the points ``texture`` keeps), ``nxt`` is warped back by the
    rotation homography ``K·R_y(ω)·K⁻¹`` (f from the 70° FOV, centre at the frame's middle),
    and the flow is measured again between ``prev`` and the warped frame, where a turn leaves
    almost nothing to measure and a strafe leaves its parallax. The result is
    ``rotation_flow(ω)`` plus that second flow, in the pair's units, so the fit reads it as it
    reads any flow (first order in ω: ``K·R·K⁻¹`` moves a point by ``rotation_flow`` plus terms
    in ω², which the second flow carries). A turn under the
    still-video floor at the centre is not warped out: ``flow`` is returned as it is.
    """
    omega = turn_to_warp_out(flow, texture)
    if omega is None:
        return flow
    return warped_out_flow(flow_fn, prev, nxt, omega)


def turn_to_warp_out(
    flow: F32, texture: Texture | None = None, focal: float | None = None
) -> float | None:
    """``derotated_flow``'s turn ω (radians per pair), read from ``flow``'s vertical component on
    the fit's grid; None when it is under the still-video floor at the centre (nothing to warp
    out). Separate from the warp so a live episode can decide at once and warp later, only the
    frames the fit picks (``Perceiver``), with the same arithmetic as at once. ``focal``: the
    episode's camera (``metrics.fits.camera``), else WorldMark's 70°."""
    focal = analysis_focal(flow.shape[1]) if focal is None else focal
    plain = sample_fit(0, flow, None, texture=texture)
    ok = np.isfinite(plain.v)
    x, y, v = (np.asarray(a[ok], np.float64) for a in (plain.x, plain.y, plain.v))
    omega = rotation_rate(x, y, v, focal) if x.size else 0.0
    return None if abs(omega) * focal < MOTION_FLOOR_PX else omega


def warped_out_flow(
    flow_fn: Callable[[npt.NDArray[np.uint8], npt.NDArray[np.uint8]], F32],
    prev: npt.NDArray[np.uint8],
    nxt: npt.NDArray[np.uint8],
    omega: float,
    focal: float | None = None,
) -> F32:
    """``derotated_flow`` for a known turn ``omega``: the flow of ``prev`` → ``nxt`` with ``nxt``
    warped back by ``K·R_y(ω)·K⁻¹``, plus the turn's exact field (``focal``: the episode's
    camera, else WorldMark's 70°)."""
    height, width = prev.shape[:2]
    focal = analysis_focal(width) if focal is None else focal
    cx, cy = (width - 1) / 2.0, (height - 1) / 2.0
    k = np.array([[focal, 0.0, cx], [0.0, focal, cy], [0.0, 0.0, 1.0]])
    c, s = math.cos(omega), math.sin(omega)
    turn = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    # dst(p) = nxt(H·p): where the turn took prev's pixel p
    homography = k @ turn @ np.linalg.inv(k)
    warped = cv2.warpPerspective(
        nxt,
        homography,
        (width, height),
        flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
        borderMode=cv2.BORDER_REPLICATE,
    )
    rest = flow_fn(prev, np.asarray(warped, dtype=np.uint8))
    xs, ys = _pixel_offsets(height, width)
    turn_u, turn_v = rotation_flow(xs, ys, omega, focal)
    out = np.empty_like(rest, dtype=np.float32)
    out[..., 0] = turn_u + rest[..., 0]
    out[..., 1] = turn_v + rest[..., 1]
    return out

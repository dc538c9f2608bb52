"""What one key press did to the picture, frame by frame: the flow signals the scoring reads.

Every frame the server sent while a candidate key was held, and while it rested after the
keyup, is brought to the analysis frame (``perception.analysis``: 640×432 grey) and each
consecutive pair gets the scoring's flow (DIS, ``perception.flow``) and its signals: Sx (mean
horizontal flow, + under A and L), Srad (mean radial flow, + under W) and Sy (the vertical
flow the top and bottom halves share, what a pitch makes and none of the six keys should: a
forward step over a ground plane moves the ground down and the sky not at all, and a world of
objects nearer below the horizon than above moves more down than up; neither is a pitch).
The pairs of the press's plateau also give motion-type samples, derotated as the scoring
derotates them (``perception.motion_samples``), so ``classify`` can tell a strafe from a
turn with the same depth-free estimator the scores use (docs/methods.md#motion-type-fit).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from streameval.core.episode.motion import FitSample, MotionFit
from streameval.metrics.fits.motion_type import analysis_focal, fit_flow_rotation_per_frame
from streameval.perception.analysis import to_analysis_gray
from streameval.perception.flow import FlowBackend, create_flow_backend
from streameval.perception.motion_samples import derotated_flow, sample_fit, texture_grid
from streameval.perception.signals import flow_signals

PLATEAU_SHARE = 0.5
"""A pair belongs to the press's plateau when its motion is at least this share of the
window's strongest (the ramps on either side are the ease times, not the motion's type)."""
MAX_FIT_PAIRS = 8
"""Motion-type samples per press: enough for the per-frame estimator, few enough that a probe
of a dozen keys stays within seconds of CPU."""


@dataclass(frozen=True, slots=True)
class PressWindow:
    """The frames of one candidate: held from ``t_down`` to ``t_up`` (wall clock), then at
    rest until the next candidate; ``times`` are the frames' arrival times."""

    name: str
    t_down: float
    t_up: float
    times: list[float]
    frames: list[npt.NDArray[np.uint8]] = field(repr=False)


@dataclass(frozen=True, slots=True)
class PressSignals:
    """Per consecutive pair of a window: its arrival time (the later frame's) and the flow
    signals in analysis pixels per frame; ``fit``: the depth-free motion type of the plateau
    (None when it does not move or gives no fit)."""

    name: str
    t_down: float
    t_up: float
    t: npt.NDArray[np.float64]
    sx: npt.NDArray[np.float64]
    srad: npt.NDArray[np.float64]
    sy: npt.NDArray[np.float64]
    fit: MotionFit | None
    width: int


def analysis_frame(image: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """The grey analysis frame the flow sees (kept instead of the server's frame: a probe of
    a dozen keys at 640×360 would otherwise hold a gigabyte)."""
    return to_analysis_gray(image)


def shared_vertical(flow: npt.NDArray[np.float32]) -> float:
    """The vertical flow common to the frame's top and bottom halves: their means when both
    move the same way, the smaller of the two (with its sign), else 0. A pitch moves the
    whole picture alike; forward motion moves the halves apart, or one more than the other."""
    half = flow.shape[0] // 2
    top = float(np.mean(flow[:half, :, 1]))
    bottom = float(np.mean(flow[half:, :, 1]))
    if top * bottom <= 0:
        return 0.0
    return top if abs(top) < abs(bottom) else bottom


def press_signals(window: PressWindow, flow: FlowBackend | None = None) -> PressSignals:
    """The signals of every consecutive pair of ``window`` (frames already analysis grey)."""
    backend = flow or create_flow_backend("dis-fast")
    frames = window.frames
    n = max(0, len(frames) - 1)
    sx, srad, sy = (np.zeros(n) for _ in range(3))
    flows: list[npt.NDArray[np.float32]] = []
    for i in range(n):
        f = np.asarray(backend(frames[i], frames[i + 1]), dtype=np.float32)
        sx[i], srad[i] = flow_signals(f)
        sy[i] = shared_vertical(f)
        flows.append(f)
    width = frames[0].shape[1] if frames else 0
    fit = _plateau_fit(backend, frames, flows, sx, srad, sy, width)
    t = np.asarray(window.times[1:], dtype=np.float64)
    return PressSignals(window.name, window.t_down, window.t_up, t, sx, srad, sy, fit, width)


def _plateau_fit(
    backend: FlowBackend,
    frames: list[npt.NDArray[np.uint8]],
    flows: list[npt.NDArray[np.float32]],
    sx: npt.NDArray[np.float64],
    srad: npt.NDArray[np.float64],
    sy: npt.NDArray[np.float64],
    width: int,
) -> MotionFit | None:
    if not flows:
        return None
    motion = np.sqrt(sx * sx + srad * srad + sy * sy)
    peak = float(motion.max())
    if peak <= 0:
        return None
    plateau = np.flatnonzero(motion >= PLATEAU_SHARE * peak)
    if plateau.size > MAX_FIT_PAIRS:
        plateau = plateau[np.linspace(0, plateau.size - 1, MAX_FIT_PAIRS).round().astype(int)]
    samples: list[FitSample] = []
    for i in plateau:
        prev, nxt = frames[i], frames[i + 1]
        texture = texture_grid(prev)
        rotated_out = derotated_flow(backend, prev, nxt, flows[i], texture)
        samples.append(sample_fit(int(i), rotated_out, None, derotated=True, texture=texture))
    return fit_flow_rotation_per_frame(samples, analysis_focal(width))

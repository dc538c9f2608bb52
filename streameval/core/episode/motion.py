"""The motion-type fit's input and outcome (docs/methods.md#motion-type-fit): the flow samples
perception keeps of a lateral or yaw segment's frames, and the weights a fit gives the segment.

The samples are stored in the episode cache and the fits in the episode's scores; the fit
itself is ``metrics/fits/motion_type.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from streameval.core.arrays import F32


@dataclass(frozen=True, slots=True)
class FitSample:
    """Coarse flow grid of one sampled frame; ``invz`` is None without depth.

    ``x``/``y`` are pixel offsets from the image centre in analysis pixels. ``derotated``: the
    flow is the frame's turn field plus the flow measured after warping that turn out of the
    pair (``perception.motion_samples.derotated_flow``), not the flow measured directly.
    """

    frame: int
    x: F32
    y: F32
    u: F32
    v: F32
    invz: F32 | None
    derotated: bool = False


@dataclass(frozen=True, slots=True)
class MotionFit:
    """Outcome of one segment's fit: the weights and how they were obtained."""

    p_trans: float
    p_yaw: float
    trans_amp: float
    rot_amp: float
    method: str  # "depth_parallax" (WorldMark) or a depth-free method (ours, motion_type.py)
    n_frames: int
    n_points: int

    def to_json(self) -> dict[str, float | int | str]:
        return {
            "p_trans": self.p_trans,
            "p_yaw": self.p_yaw,
            "trans_amp": self.trans_amp,
            "rot_amp": self.rot_amp,
            "method": self.method,
            "n_frames": self.n_frames,
            "n_points": self.n_points,
        }

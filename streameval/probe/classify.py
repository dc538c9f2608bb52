"""What a key does, from its press's flow signals (``measure.PressSignals``).

The channel that moved most over the press's plateau says the family: Srad forward/back, Sy
pitch, Sx sideways; sideways motion is a strafe or a turn by the depth-free motion type the
scoring uses (``p_yaw`` of the plateau's samples, ``metrics.fits.motion_type``), and a fit
that is not clearly either is *ambiguous*, never a guess. The sign says the direction (Sx + is
content moving right: a strafe or a turn to the left, docs/methods.md#keys).

Times (docs/bring-up-a-new-server.md#what-probe-measures): the response is the wall time from
the keydown to the first frame moving at 10 % of the plateau's level in the key's direction;
ease-in the video time from that frame to the first at 90 %; ease-out the video time from the
last frame at 90 % to the first below 10 % after it (None when the motion did not fade before
the next key). Speeds are per second of video: analysis pixels (640×432) for moves, degrees
for turns (the 70° field of view the scoring assumes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from streameval.constants import FOV_DEG
from streameval.engine.keys_contradicted import TYPE_CERTAIN
from streameval.engine.keys_ignored import RESPONSE_FLOOR_PX
from streameval.metrics.fits.motion_type import analysis_focal
from streameval.probe.measure import PLATEAU_SHARE, PressSignals

Motion = Literal[
    "forward",
    "back",
    "strafe left",
    "strafe right",
    "yaw left",
    "yaw right",
    "pitch up",
    "pitch down",
    "sideways left",  # moves left, neither clearly a strafe nor a turn
    "sideways right",
    "nothing",
]
MOTION_OF_KEY: dict[str, Motion] = {
    "W": "forward",
    "S": "back",
    "A": "strafe left",
    "D": "strafe right",
    "L": "yaw left",
    "R": "yaw right",
}
AMBIGUOUS: dict[str, Motion] = {"A": "sideways left", "D": "sideways right",
                                "L": "sideways left", "R": "sideways right"}  # fmt: skip
MIN_MOVING_PAIRS = 3
"""Pairs over the response floor a press needs before it counts as moving at all."""
SUSTAINED_SHARE = 0.5
"""...and at least this share of the press's own length in frames (those that arrived while
it was held, at most its seconds at the fps): a key moves the picture
for about as long as it is held, while a video track's keyframe or a late tail of the name
before moves it for a few frames (a WebRTC probe read such a blip as a sideways key)."""
ONSET, SETTLED = 0.1, 0.9
"""Shares of the plateau's level that start and end a ramp (a rise time's 10 %-90 %)."""
MIXED_SHARE = 0.7
"""A second channel at least this share of the first: the key does two things at once."""


@dataclass(frozen=True, slots=True)
class KeyMotion:
    """What pressing ``name`` did. ``speed`` is px/s (analysis pixels) or °/s for turns,
    ``p_yaw`` the plateau's motion type (sideways motion only), times in seconds."""

    name: str
    motion: Motion
    speed: float | None = None
    unit: str = ""
    p_yaw: float | None = None
    response_s: float | None = None
    ease_in_s: float | None = None
    ease_out_s: float | None = None
    mixed: str | None = None  # the second channel, when the key also does that

    @property
    def ambiguous(self) -> bool:
        return self.motion.startswith("sideways") or self.mixed is not None

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "motion": self.motion,
            "speed": _round(self.speed),
            "unit": self.unit,
            "p_yaw": _round(self.p_yaw, 3),
            "response_s": _round(self.response_s, 3),
            "ease_in_s": _round(self.ease_in_s, 3),
            "ease_out_s": _round(self.ease_out_s, 3),
            "mixed": self.mixed,
            "ambiguous": self.ambiguous,
        }


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def turn_rate(sx: float, width: int) -> float:
    """Radians per frame of a yaw whose mean horizontal flow over an analysis frame ``width``
    wide is ``sx``: a turn moves a pixel at offset x by ω·(f + x²/f), whose mean over the
    width is ω·(f + W²/(12 f))."""
    focal = analysis_focal(width, FOV_DEG)
    return sx / (focal + width * width / (12.0 * focal))


def classify(signals: PressSignals, fps: float, *, silent_at_rest: bool = False) -> KeyMotion:
    """The motion of one press (``fps``: the video's rate, for speeds and ease times).
    ``silent_at_rest``: the server sends no frame while no key is held, so a press's motion
    ends with its last frame (the picture stops there): its ease-out is measured to it."""
    channels = {"srad": signals.srad, "sy": signals.sy, "sx": signals.sx}
    motion = np.sqrt(signals.sx**2 + signals.srad**2 + signals.sy**2)
    # the press's length in the frames that came while it was held (a server slower than its
    # fps under load, or silent until the first control, is not asked for frames it never sent)
    if math.isfinite(signals.t_up):
        inside = (signals.t >= signals.t_down) & (signals.t <= signals.t_up)
        held = min(float(np.sum(inside)), (signals.t_up - signals.t_down) * fps)
    else:
        held = float(motion.size)
    needed = max(MIN_MOVING_PAIRS, SUSTAINED_SHARE * held)
    if motion.size == 0 or int(np.sum(motion >= RESPONSE_FLOOR_PX)) < needed:
        return KeyMotion(signals.name, "nothing")
    plateau = motion >= PLATEAU_SHARE * float(motion.max())
    # medians: the plateau's own level, not pulled down by the ramps' upper halves
    means = {name: float(np.median(values[plateau])) for name, values in channels.items()}
    ranked = sorted(means, key=lambda name: -abs(means[name]))
    channel, second = ranked[0], ranked[1]
    level = means[channel]
    if abs(level) < RESPONSE_FLOOR_PX:
        return KeyMotion(signals.name, "nothing")
    mixed = second if abs(means[second]) >= MIXED_SHARE * abs(level) else None
    p_yaw = signals.fit.p_yaw if signals.fit is not None else None
    speed = abs(level) * fps
    unit = "px/s"
    name: Motion
    if channel == "srad":
        name = "forward" if level > 0 else "back"
    elif channel == "sy":
        name = "pitch up" if level > 0 else "pitch down"  # content moving down: looking up
    else:
        side = "left" if level > 0 else "right"
        if p_yaw is not None and p_yaw >= TYPE_CERTAIN:
            name = "yaw left" if side == "left" else "yaw right"
            speed = math.degrees(abs(turn_rate(level, signals.width))) * fps
            unit = "°/s"
        elif p_yaw is not None and p_yaw <= 1.0 - TYPE_CERTAIN:
            name = "strafe left" if side == "left" else "strafe right"
        else:
            name = "sideways left" if side == "left" else "sideways right"
    timing = _timing(signals, channels[channel] * np.sign(level), abs(level), fps, silent_at_rest)
    return KeyMotion(signals.name, name, speed, unit, p_yaw, *timing, mixed=mixed)


def _timing(
    signals: PressSignals,
    along: npt.NDArray[np.float64],
    level: float,
    fps: float,
    silent_at_rest: bool = False,
) -> tuple[float | None, float | None, float | None]:
    """(response, ease-in, ease-out) of a press whose key channel, signed so that its
    direction is positive, is ``along`` with plateau ``level``."""
    onset = np.flatnonzero(along >= ONSET * level)
    if onset.size == 0:
        return None, None, None
    first = int(onset[0])
    response = max(0.0, float(signals.t[first]) - signals.t_down)
    settled = np.flatnonzero(along[first:] >= SETTLED * level)
    ease_in = float(settled[0]) / fps if settled.size else None
    last = first + int(settled[-1]) if settled.size else first
    faded = np.flatnonzero(along[last + 1 :] < ONSET * level)
    ease_out = float(faded[0] + 1) / fps if faded.size else None
    if ease_out is None and silent_at_rest:  # no fade to see: the motion stops with the frames
        ease_out = float(along.size - 1 - last) / fps
    return response, ease_in, ease_out

"""The six WorldAtlas memory_loop trajectories (docs/methods.md#suites): closed camera loops of
camera tokens.

Each token is an equal share of the episode (60 s at 24 FPS by default): ``pan_right`` /
``pan_left`` are a 30 degree yaw (key R / L), ``push_in`` / ``pull_out`` one step forward /
back (key W / S). A retrace loop appends the reversed inverse of its outbound legs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from streameval.protocol.schedule import Schedule

from streameval.errors import UnknownTrajectoryError

MEMORY_LOOP_SUITE = "memory_loop"  # the suite name in meta.json, episode caches, scores.json
MEMORY_LOOP_SECONDS = 60.0
MEMORY_LOOP_FPS = 24.0
PAN_DEGREES = 30.0  # one pan token
TOKEN_KEY: dict[str, str] = {"push_in": "W", "pull_out": "S", "pan_right": "R", "pan_left": "L"}
INVERSE: dict[str, str] = {
    "push_in": "pull_out",
    "pull_out": "push_in",
    "pan_right": "pan_left",
    "pan_left": "pan_right",
}


def _retrace(*legs: list[str]) -> list[str]:
    """Outbound legs, then the reversed inverse of all of them (the camera walks back)."""
    outbound = [token for leg in legs for token in leg]
    return outbound + [INVERSE[token] for token in reversed(outbound)]


TRAJECTORIES: dict[str, tuple[str, ...]] = {
    "yaw_loop_360": tuple(["pan_right"] * 12),
    "yaw_loop_180": tuple(_retrace(["pan_right"] * 6)),
    "dolly_loop": tuple(_retrace(["push_in"] * 4)),
    "palindrome_loop": tuple(_retrace(["push_in"] * 3, ["pan_right"] * 2 + ["push_in"] * 3)),
    "double_yaw_loop": tuple((["pan_right"] * 6 + ["pan_left"] * 6) * 2),
    "square_loop": tuple((["push_in"] * 3 + ["pan_right"] * 3) * 4),
}


@dataclass(frozen=True, slots=True)
class MemoryLoop:
    """One trajectory at a frame rate and duration: its tokens and its key schedule."""

    name: str
    tokens: tuple[str, ...]
    fps: float = MEMORY_LOOP_FPS
    seconds: float = MEMORY_LOOP_SECONDS

    @property
    def token_seconds(self) -> float:
        return self.seconds / len(self.tokens)

    @property
    def total_frames(self) -> int:
        return round(self.seconds * self.fps)

    def schedule(self) -> Schedule:
        """One segment per token, the frames split equally (consecutive equal keys kept apart)."""
        keys = [TOKEN_KEY[t] for t in self.tokens]
        return Schedule.split_equally(keys, self.total_frames, self.fps)

    @property
    def yaw_rate_deg(self) -> float:
        """The turn rate that makes one pan token exactly 30 degrees."""
        return PAN_DEGREES / self.token_seconds

    def speed(self, step: float) -> float:
        """The forward speed that makes one push token exactly ``step`` long."""
        return step / self.token_seconds


def memory_loop(
    name: str, *, fps: float = MEMORY_LOOP_FPS, seconds: float = MEMORY_LOOP_SECONDS
) -> MemoryLoop:
    try:
        return MemoryLoop(name, TRAJECTORIES[name], float(fps), float(seconds))
    except KeyError:
        known = ", ".join(TRAJECTORIES)
        raise UnknownTrajectoryError(
            f"unknown memory_loop trajectory {name!r} (known: {known})"
        ) from None


def ideal_poses(loop: MemoryLoop, *, step: float = 1.0) -> NDArray[np.float64]:
    """Camera-to-world poses (OpenCV axes) of a camera that executes every token exactly.

    Pose t is where the camera is at frame t; frame t moves by the key of frame t. R turns the
    optical axis (+z) toward +x, W moves along +z of the current camera.
    """
    keys = loop.schedule().frame_keys()
    dt = 1.0 / loop.fps
    yaw_step = np.radians(loop.yaw_rate_deg * dt)
    move_step = loop.speed(step) * dt
    poses = np.zeros((len(keys), 4, 4))
    rotation = np.eye(3)
    position = np.zeros(3)
    for t, key in enumerate(keys):
        if t > 0:
            if key in ("R", "L"):
                a = yaw_step if key == "R" else -yaw_step
                c, s = np.cos(a), np.sin(a)
                rotation = rotation @ np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
            elif key in ("W", "S"):
                position = position + rotation[:, 2] * (move_step if key == "W" else -move_step)
        poses[t, :3, :3] = rotation
        poses[t, :3, 3] = position
        poses[t, 3, 3] = 1.0
    return poses

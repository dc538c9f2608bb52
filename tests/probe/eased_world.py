"""The procedural world as a renderer of any motion, for the probe's test servers (which
import no streameval code: they are handed ``EasedWorld.render``).

A probe is tested on eased motion (a server's speed ramps up over a press and down after the
keyup), which ``ProceduralWorld.step(key)`` cannot make: it moves at full speed or not at all.
So the camera is advanced here by a fraction of each key's full motion, with the world's own
camera arithmetic and renderer (the scenes its motion-type estimator was validated on).
"""

from __future__ import annotations

import math

import numpy as np
from streameval.worlds.procedural_world import ProceduralWorld
from streameval.worlds.procedural_world.camera import advance
from streameval.worlds.procedural_world.config import world_config_for_defect

WIDTH, HEIGHT = 320, 216
YAW_RATE_DEG = 20.0


class EasedWorld:
    """``render((forward, right, yaw))``: the next frame after moving by that share of full
    speed (right > 0 strafes right, yaw > 0 turns right) for one frame."""

    def __init__(self, seed: int = 0) -> None:
        config = world_config_for_defect(
            "clean", width=WIDTH, height=HEIGHT, seed=seed, yaw_rate_deg=YAW_RATE_DEG,
            depth_downsample=4, depth_range_m=None, depth_resolvable_step=None,
        )  # fmt: skip
        self.world = ProceduralWorld(config)
        self.config = config

    def start_from(self, image: np.ndarray) -> None:
        """Back to the start, the case image standing across the view (the world's own
        ``reset``)."""
        self.world.reset(image=image)

    def render(self, motion: tuple[float, float, float]) -> np.ndarray:
        w, cfg = self.world, self.config
        forward, right, yaw = motion
        state = advance(
            w._state,
            forward * cfg.forward_speed,
            right * cfg.strafe_speed,
            yaw * math.radians(cfg.yaw_rate_deg),
            1.0 / cfg.fps,
        )
        w._state = state
        return np.asarray(w._renderer.render(state, w._look).image)

"""How a world with defects turns the commanded keys into motion, and spoils its images.

Each defect is a small, separately testable rule applied per frame, in this order:
key_map (the world obeys another key) → response delay (it obeys the key of d frames ago)
→ freeze → hiccup stall → speed decay → axis leakage; hard cuts teleport the camera on a
fixed clock and switch the scene's look (palette and lighting, see ``looks``). Time is the
*video* clock, frame / fps, like the evaluator's (protocol.schedule), so a defect behaves the
same however fast the frames are rendered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
from streameval.worlds.procedural_world.camera import KEY_MOTION, CameraState
from streameval.worlds.procedural_world.config import WorldConfig
from streameval.worlds.procedural_world.looks import Look, look_for_cut
from streameval.worlds.procedural_world.scene import CELL_M

from streameval.core.arrays import Image

HARD_CUT_CELLS = (200, 2000)
"""A hard cut lands this many lattice cells (1.2–12 km) away along each axis: far enough that
nothing of the previous view can be in sight."""
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Motion:
    """Body-frame velocities for one frame (m/s, m/s, rad/s); at a hard cut, where the
    camera is teleported before it moves and the look the scene switches to (both None
    when there is no cut)."""

    forward: float = 0.0
    right: float = 0.0
    yaw: float = 0.0
    teleport: CameraState | None = None
    look: Look | None = None


class KeyResponse:
    """The world's side of the keyboard: commanded key per frame in, motion out."""

    def __init__(self, config: WorldConfig) -> None:
        self.config = config
        self._delay_frames = round(config.response_delay_s * config.fps)
        self.reset()

    def reset(self) -> None:
        self._history: list[str] = []
        self._obeyed = "-"
        self._obeyed_since = 0
        self._cuts = 0

    def obeyed_key(self, frame: int, commanded: str) -> str:
        """The key the world acts on at ``frame`` (after key_map and delay); must be called
        once per frame, in order."""
        mapped = self.config.key_map.get(commanded, commanded)
        self._history.append(mapped)
        source = frame - self._delay_frames
        obeyed = self._history[source] if source >= 0 else "-"
        if obeyed != self._obeyed:
            self._obeyed = obeyed
            self._obeyed_since = frame
        return obeyed

    def motion(self, frame: int, commanded: str) -> Motion:
        """The motion of frame ``frame`` (0-based) when ``commanded`` was sent for it."""
        cfg = self.config
        obeyed = self.obeyed_key(frame, commanded)
        t = frame / cfg.fps
        if cfg.freeze_after_s is not None and t >= cfg.freeze_after_s - _EPS:
            return Motion()
        cut = self._hard_cut(frame)
        teleport, look = cut if cut is not None else (None, None)
        factor = 1.0
        if cfg.hiccup_period_s is not None:
            phase = t - cfg.hiccup_period_s * math.floor(t / cfg.hiccup_period_s + _EPS)
            if phase >= cfg.hiccup_period_s - cfg.hiccup_duration_s - _EPS:
                factor = 0.0
        if cfg.speed_decay_tau_s is not None:
            held = (frame - self._obeyed_since) / cfg.fps
            factor *= math.exp(-held / cfg.speed_decay_tau_s)
        fwd, right, yaw = KEY_MOTION[obeyed]
        yaw_rate = math.radians(cfg.yaw_rate_deg)
        return Motion(
            forward=factor * fwd * cfg.forward_speed,
            right=factor * cfg.strafe_speed * (right + cfg.leak_strafe_on_forward * abs(fwd)),
            # A (right = -1) leaks toward L (yaw -1): both move content the same way
            yaw=factor * yaw_rate * (yaw + cfg.leak_yaw_on_strafe * right),
            teleport=teleport,
            look=look,
        )

    def _hard_cut(self, frame: int) -> tuple[CameraState, Look] | None:
        """Where the camera lands and the new look, at the first frame of each cut period
        (the look of the k-th cut depends only on (seed, k): ``looks.look_for_cut``)."""
        every = self.config.hard_cut_every_s
        if every is None or frame == 0:
            return None
        period_frames = every * self.config.fps
        cuts = math.floor(frame / period_frames + _EPS)
        if cuts <= self._cuts:
            return None
        self._cuts = cuts
        rng = np.random.default_rng([self.config.seed, cuts, 0xC07])
        lo, hi = HARD_CUT_CELLS
        cells = rng.integers(lo, hi, size=2) * rng.choice([-1, 1], size=2)
        landing = CameraState(
            x=float(cells[0]) * CELL_M,
            z=float(cells[1]) * CELL_M,
            heading=float(rng.integers(4)) * math.pi / 2.0,
        )
        return landing, look_for_cut(self.config.seed, cuts)


def exposure_gain(config: WorldConfig, frame: int) -> float:
    """Brightness gain of ``frame``: the exposure ramp (linear in stops, then held) times the
    flicker (1 + a·u, u uniform in [−1, 1] seeded by (seed, frame)); 1.0 when both are off."""
    gain = 1.0
    if config.exposure_ramp_stops != 0:
        progress = min(1.0, frame / config.fps / config.exposure_ramp_s)
        gain = 2.0 ** (config.exposure_ramp_stops * progress)
    if config.flicker_amplitude > 0:
        rng = np.random.default_rng([config.seed, frame, 0xF11C])
        gain *= 1.0 + config.flicker_amplitude * float(rng.uniform(-1.0, 1.0))
    return gain


def degrade(image: Image, config: WorldConfig, frame: int) -> Image:
    """Apply the image defects in the order a camera would: Gaussian blur (optics), then the
    exposure gain (ramp and flicker), then additive noise seeded by (seed, frame) (sensor), so
    that the same frame of the same world always gets the same defects."""
    out = image
    if config.blur_sigma > 0:
        out = np.asarray(cv2.GaussianBlur(out, (0, 0), config.blur_sigma), dtype=np.uint8)
    gain = exposure_gain(config, frame)
    if gain != 1.0:
        scaled = out.astype(np.float32) * np.float32(gain)
        out = np.clip(np.rint(scaled), 0, 255).astype(np.uint8)
    if config.noise_std > 0:
        rng = np.random.default_rng([config.seed, frame, 0x401])
        noise = rng.standard_normal(out.shape, dtype=np.float32)
        noise *= np.float32(config.noise_std)
        noise += out
        out = np.clip(np.rint(noise), 0, 255).astype(np.uint8)
    return out

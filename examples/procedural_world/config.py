"""Configuration of the procedural world: image, camera speeds, and injectable defects.

The defaults are a clean, obedient model. Each defect is one field, off by default, so a test
(or ``streameval demo``) can build a model that fails one metric in a known way:
``world_config_for_defect("delay")`` is the clean world with a 1.5 s response delay.

Speeds are chosen for three reasons. At 16 fps the stride-2 optical flow
(docs/methods.md#analysis-frame-and-flow-units) is a few to ~15 px, the range where DIS flow is
accurate. The three families move the flow by similar amounts (W/S ≈ 8 px of Srad, A/D ≈ 9.7 px
and L/R ≈ 5.2 px of Sx), because response latency uses one absolute reference per episode (P75 of
|channel|, docs/methods.md#response-latency): a clean model whose turns were five times faster
than its walk would fail the walk's latency. And 20 s of a key is a whole number of 12 m lattice
cells or quarter turns (W: 48 m, A/D: 24 m, L/R: 90°), so every worldmark sequence keeps the
camera on the object-free streets of the scene (see ``scene``); 10 s of W/S/A/D also ends on a
street (24 m, 12 m), which the quicker tests rely on.
The low eye height (1 m) makes the ground, whose flow is left/right symmetric, fill more of
the view: the off-axis flow of a clean strafe stays near 10 % of the on-axis flow.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from streameval.protocol.keys import KEYS, NO_KEY, OPPOSITE

from streameval.constants import DEFAULT_FPS
from streameval.errors import UnknownDefectError, WorldConfigError


@dataclass(frozen=True)
class WorldConfig:
    """Everything that defines a procedural world; same config + same keys = same frames."""

    # --- image and camera -------------------------------------------------------------
    width: int = 640
    """Image width in pixels (the analysis width, docs/methods.md#analysis-frame-and-flow-units)."""
    height: int = 432
    """Image height in pixels (the analysis height,
    docs/methods.md#analysis-frame-and-flow-units)."""
    fps: float = DEFAULT_FPS
    """Frames per second of video time; each ``step`` advances 1/fps s."""
    fov_deg: float = 70.0
    """Horizontal field of view (the memory metrics assume 70°,
    docs/methods.md#degrees-on-the-analysis-width)."""
    seed: int = 0
    """Scene layout, object appearance, hard-cut destinations and looks, per-frame noise."""
    depth_downsample: int = 1
    """Depth is rendered at (height // d, width // d), covering the same field of view. Full
    resolution by default: on a coarser grid the nearest-pixel lookup of Global Memory
    (docs/methods.md#global_memory) costs a perfect model its score."""
    camera_height: float = 1.0
    """Eye height above the ground plane, metres."""
    depth_range_m: float | None = 12.0
    """Report z-depth beyond this as unknown (NaN), as a depth sensor's range does
    (``depth_output``; None = report every finite depth). 12 m: beyond it a one-pixel shift on
    the grazing ground moves a point by more than Global Memory's tolerance."""
    depth_resolvable_step: float | None = 0.015
    """Report a depth pixel as unknown (NaN) when its depth differs from a 4-neighbour's by
    more than this × the nearer (its footprint spans many depths: grazing ground, silhouettes;
    ``depth_output``; None = off). 1.5 %: on the ground at full resolution, beyond about 7 m."""

    # --- key response ------------------------------------------------------------------
    forward_speed: float = 2.4
    """W/S speed, m/s (0.3 m per stride-2 step at 16 fps)."""
    strafe_speed: float = 1.2
    """A/D speed, m/s."""
    yaw_rate_deg: float = 4.5
    """L/R turn rate, degrees per second (about 5 px of stride-2 flow)."""

    # --- defects (all off by default) --------------------------------------------------
    response_delay_s: float = 0.0
    """A key change takes effect this much video time later; until then the world keeps
    obeying the previous key (at the start, it stands still)."""
    key_map: Mapping[str, str] = field(default_factory=dict)
    """Commanded key -> key the world obeys, e.g. {"A": "D", "D": "A"}; unmapped keys pass."""
    leak_yaw_on_strafe: float = 0.0
    """While strafing, also yaw at this fraction of ``yaw_rate_deg``. Positive turns so the
    content flows the same way as the strafe (A with L, D with R); negative the other way."""
    leak_strafe_on_forward: float = 0.0
    """While moving forward/back, also strafe at this fraction of ``strafe_speed``
    (positive = to the right)."""
    hiccup_period_s: float | None = None
    """Every this many seconds the camera stalls (None = never)."""
    hiccup_duration_s: float = 0.6
    """Length of each stall; stalls occupy the end of each period, the first ends at
    ``hiccup_period_s``."""
    speed_decay_tau_s: float | None = None
    """Speed decays as exp(−t/τ) with the time t since the obeyed key last changed."""
    freeze_after_s: float | None = None
    """From this video time on the camera never moves again (0 = frozen from the start)."""
    hard_cut_every_s: float | None = None
    """At every multiple of this time the camera teleports to a far random street crossing
    and a random quarter-turn heading, and the scene switches to a new look (palette of
    ground, objects and sky, sun direction; ``looks``): an abrupt change of scene, which
    TransNetV2 and PySceneDetect find at the right frame (the teleport alone kept sky and
    ground colours and was missed)."""
    forget: bool = False
    """Objects, ground slabs and backdrop sectors get a new random appearance once they have
    left the view, so coming back to a place shows different content; a regenerated object
    also moves by 0.5–1.5 m and grows or shrinks by 15–35 % (within its block, so streets
    stay clear), so the place's geometry differs too, not only its look."""
    forget_scene_at_s: float | None = None
    """At this video time the world forgets the whole scene at once, in view or not (a model
    whose context is reset, or that makes a new place up after turning around): every object,
    ground slab and backdrop sector is regenerated as ``forget`` regenerates one (new texture,
    moved and resized objects, sunken streets), so from then on the depth disagrees with what
    the same pose showed before (None = never)."""
    blur_sigma: float = 0.0
    """Gaussian blur of the output image, pixels (0 = off)."""
    noise_std: float = 0.0
    """Additive Gaussian noise, 0–255 units, seeded per frame (0 = off)."""
    exposure_ramp_stops: float = 0.0
    """Exposure drifts by this many stops (gain 2^stops; negative darkens), linearly in stops
    over ``exposure_ramp_s`` of video time, then holds (0 = off): an auto-exposure that
    wanders, or a model whose images darken as the rollout goes on."""
    exposure_ramp_s: float = 10.0
    """Duration of the exposure ramp, seconds of video time."""
    flicker_amplitude: float = 0.0
    """Frame-to-frame brightness flicker: each frame's gain is 1 + a·u with u uniform in
    [−1, 1], seeded per frame (0 = off); the mean brightness over many frames is unchanged."""

    def __post_init__(self) -> None:
        if self.width < 8 or self.height < 8:
            raise WorldConfigError(f"width and height must be >= 8, got {self.width}x{self.height}")
        if not (math.isfinite(self.fps) and self.fps > 0):
            raise WorldConfigError(f"fps must be > 0, got {self.fps}")
        if not 1.0 <= self.fov_deg <= 150.0:
            raise WorldConfigError(f"fov_deg must be in [1, 150], got {self.fov_deg}")
        if self.seed < 0:
            raise WorldConfigError(f"seed must be >= 0, got {self.seed}")
        if self.depth_downsample < 1:
            raise WorldConfigError(f"depth_downsample must be >= 1, got {self.depth_downsample}")
        if self.camera_height <= 0:
            raise WorldConfigError(f"camera_height must be > 0, got {self.camera_height}")
        for name in ("depth_range_m", "depth_resolvable_step"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise WorldConfigError(f"{name} must be > 0 or None, got {value}")
        if self.response_delay_s < 0:
            raise WorldConfigError(f"response_delay_s must be >= 0, got {self.response_delay_s}")
        for name in ("hiccup_period_s", "speed_decay_tau_s", "hard_cut_every_s"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise WorldConfigError(f"{name} must be > 0 or None, got {value}")
        if self.forget_scene_at_s is not None and not self.forget_scene_at_s >= 0:
            raise WorldConfigError(
                f"forget_scene_at_s must be >= 0 or None, got {self.forget_scene_at_s}"
            )
        if self.freeze_after_s is not None and self.freeze_after_s < 0:
            raise WorldConfigError(
                f"freeze_after_s must be >= 0 or None, got {self.freeze_after_s}"
            )
        if self.hiccup_duration_s < 0:
            raise WorldConfigError(f"hiccup_duration_s must be >= 0, got {self.hiccup_duration_s}")
        if self.exposure_ramp_s <= 0:
            raise WorldConfigError(f"exposure_ramp_s must be > 0, got {self.exposure_ramp_s}")
        if not 0 <= self.flicker_amplitude < 1:
            raise WorldConfigError(
                f"flicker_amplitude must be in [0, 1), got {self.flicker_amplitude}"
            )
        if self.blur_sigma < 0 or self.noise_std < 0:
            raise WorldConfigError(
                f"blur_sigma and noise_std must be >= 0, got {self.blur_sigma}, {self.noise_std}"
            )
        valid = (*KEYS, NO_KEY)
        for src, dst in self.key_map.items():
            if src not in valid or dst not in valid:
                raise WorldConfigError(
                    f"key_map entry {src!r} -> {dst!r}: keys must be one of {' '.join(valid)}"
                )
        # a private copy: mutating the caller's dict later must not change this config
        object.__setattr__(self, "key_map", dict(self.key_map))

    def __hash__(self) -> int:
        values = tuple(
            tuple(sorted(v.items())) if isinstance(v, Mapping) else v
            for v in (getattr(self, f.name) for f in fields(self))
        )
        return hash(values)

    def with_overrides(self, **overrides: Any) -> WorldConfig:
        """A copy with some fields replaced (validated like a new config)."""
        return replace(self, **overrides)


DEFECT_PRESETS: dict[str, dict[str, Any]] = {
    "clean": {},
    "delay": {"response_delay_s": 1.5},
    "wrong_direction": {"key_map": dict(OPPOSITE)},
    "swap_lr": {"key_map": {"L": "R", "R": "L"}},
    "leak_yaw": {"leak_yaw_on_strafe": 2.0},  # 9°/s of yaw: as much image motion as the strafe
    "leak_strafe": {"leak_strafe_on_forward": 0.5},
    "hiccup": {"hiccup_period_s": 2.0, "hiccup_duration_s": 0.6},
    "decay": {"speed_decay_tau_s": 4.0},
    "freeze": {"freeze_after_s": 0.0},
    "hard_cut": {"hard_cut_every_s": 5.0},
    "forget": {"forget": True},
    # the turnaround of a 60 s memory_loop retrace trajectory (yaw_loop_180, dolly_loop)
    "amnesia": {"forget_scene_at_s": 30.0},
    "blur": {"blur_sigma": 2.5},
    "noise": {"noise_std": 12.0},
    "exposure_ramp": {"exposure_ramp_stops": -1.5, "exposure_ramp_s": 10.0},
    "flicker": {"flicker_amplitude": 0.15},
}
"""Named defects: WorldConfig field overrides on top of the clean defaults."""


def world_config_for_defect(name: str, **overrides: Any) -> WorldConfig:
    """The config of preset ``name`` with ``overrides`` applied on top.

    Raises UnknownDefectError naming the known presets (and the closest match) for an unknown
    name.
    """
    if name not in DEFECT_PRESETS:
        known = ", ".join(sorted(DEFECT_PRESETS))
        close = difflib.get_close_matches(name, list(DEFECT_PRESETS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownDefectError(f"unknown defect preset {name!r}{hint}; known presets: {known}")
    return WorldConfig(**{**DEFECT_PRESETS[name], **overrides})

"""``ProceduralWorld``: an interactive "world model" whose ground truth is known exactly.

It plays the part of a video world model for ``streameval demo`` and for tests: send a key,
get the next frame. Unlike a learned model it also returns the true camera pose, the exact
depth and the intrinsics, so every metric can be checked against the truth, and its defects
are injected by configuration (``WorldConfig``), so each metric can be shown to catch the
failure it is meant to catch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from streameval.protocol.keys import parse_key
from streameval.worlds.procedural_world.camera import CameraState, advance, pose_matrix
from streameval.worlds.procedural_world.config import WorldConfig
from streameval.worlds.procedural_world.defects import KeyResponse, degrade
from streameval.worlds.procedural_world.looks import CLEAN_LOOK, Look
from streameval.worlds.procedural_world.picture import Picture
from streameval.worlds.procedural_world.render import Rendered, Renderer
from streameval.worlds.procedural_world.scene import AppearanceMemory

from streameval.core.arrays import F64, Image


@dataclass(frozen=True, slots=True)
class WorldFrame:
    """One frame and its ground truth.

    ``pose`` is the true camera-to-world matrix of what was rendered (after any defect);
    ``key`` is the commanded key (what the evaluator sent), not the key the world obeyed.
    ``depth`` is metric z-depth at (H // d, W // d), pixel (i, j) on the ray through image
    point ((j + 0.5)·W/w − 0.5, (i + 0.5)·H/h − 0.5) (the ``cv2.resize`` convention); the
    backdrop is infinitely far and has depth ``inf``, as has a surface so far that the fog
    has turned it into pure backdrop (horizontal distance ≥ ``FOG_END_M``). Pixels the world
    reports as unknown (``WorldConfig.depth_range_m``, ``depth_resolvable_step``;
    ``depth_output``) are NaN.
    """

    image: npt.NDArray[np.uint8]
    pose: F64
    depth: npt.NDArray[np.float32]
    intrinsics: F64
    key: str


class ProceduralWorld:
    """A camera walking through an endless procedural town, driven by W S A D L R and '-'.

    ``step(key)`` advances the camera by one frame (1/fps s of video) under ``key`` and
    renders. Deterministic: the same config and key sequence give bit-identical frames.
    """

    def __init__(self, config: WorldConfig | None = None) -> None:
        self.config = config if config is not None else WorldConfig()
        self.fps: float = self.config.fps
        self.width: int = self.config.width
        self.height: int = self.config.height
        self._memory = AppearanceMemory(enabled=self.config.forget)
        self._renderer = Renderer(
            width=self.width,
            height=self.height,
            fov_deg=self.config.fov_deg,
            camera_height=self.config.camera_height,
            depth_downsample=self.config.depth_downsample,
            seed=self.config.seed,
            memory=self._memory,
            depth_range_m=self.config.depth_range_m,
            depth_resolvable_step=self.config.depth_resolvable_step,
        )
        self._response = KeyResponse(self.config)
        self.intrinsics: F64 = self._renderer.k.copy()
        self.reset()

    @property
    def state(self) -> CameraState:
        """Where the camera is now (after the last step)."""
        return self._state

    @property
    def look(self) -> Look:
        """The palette and lighting the scene is rendered with now (changes at hard cuts)."""
        return self._look

    @property
    def frame_index(self) -> int:
        """How many frames have been produced since the last reset."""
        return self._frame

    def reset(self, image: Image | None = None, prompt: str | None = None) -> None:
        """Back to the start: origin, looking along +z, clean look, no history, nothing
        forgotten. With a case ``image`` (RGB), the world starts from it: the image stands
        as a picture across the start view (``picture``), so the first frame is the image and
        the keys move over it and past it. The ``prompt`` is accepted as every benchmark case
        sends one; a procedural town has no use for a caption."""
        del prompt
        self._renderer.picture = (
            None
            if image is None
            else Picture.standing(
                image, self.width, self.height, self.intrinsics, self.config.camera_height
            )
        )
        self._state = CameraState()
        self._look = CLEAN_LOOK
        self._frame = 0
        self._memory.reset()
        self._response.reset()
        self._last: tuple[CameraState, Look, int, Rendered] | None = None

    def step(self, key: str) -> WorldFrame:
        """Advance one frame under ``key`` (W S A D L R, or '-' for no key) and render it."""
        commanded = parse_key(key)
        motion = self._response.motion(self._frame, commanded)
        state = motion.teleport if motion.teleport is not None else self._state
        state = advance(state, motion.forward, motion.right, motion.yaw, 1.0 / self.fps)
        look = motion.look if motion.look is not None else self._look
        forget_at = self.config.forget_scene_at_s
        if (
            forget_at is not None
            and self._memory.epoch == 0
            and self._frame / self.fps >= forget_at - 1e-9
        ):
            self._memory.forget_scene()
        rendered, reused = self._render(state, look)
        self._state = state
        self._look = look
        image = degrade(rendered.image, self.config, self._frame)
        if reused and image is rendered.image:
            image = image.copy()  # frames never share a buffer a consumer might modify
        self._frame += 1
        return WorldFrame(
            image=image,
            pose=pose_matrix(state, self.config.camera_height),
            depth=rendered.depth.copy(),
            intrinsics=self.intrinsics.copy(),
            key=commanded,
        )

    def _render(self, state: CameraState, look: Look) -> tuple[Rendered, bool]:
        """Render ``state`` in ``look``, reusing the previous frame when nothing can have
        changed (the camera stood still, the look is the same and nothing was regenerated),
        and update the forget memory. The flag says whether the previous frame was reused."""
        last = self._last
        if (
            last is not None
            and last[0] == state
            and last[1] == look
            and last[2] == self._memory.version
        ):
            return last[3], True
        rendered = self._renderer.render(state, look)
        if self._memory.enabled:
            ground, sectors = self._renderer.visible_ground_and_sky(state)
            self._memory.observe(rendered.objects_in_view, ground, sectors)
        self._last = (state, look, self._memory.version, rendered)
        return rendered, False

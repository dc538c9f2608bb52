"""Render a memory_loop trajectory with the procedural world, outside the pipeline (test helper)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from streameval.protocol.memory_loop import memory_loop
from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

STEP_M = 2.0


@dataclass
class RenderedLoop:
    frames: list[np.ndarray]
    keys: list[str]
    poses: np.ndarray
    depth: np.ndarray
    intrinsics: np.ndarray  # of the depth maps
    fps: float


def render_loop(
    name: str,
    *,
    seconds: float = 12.0,
    fps: float = 24.0,
    defect: str = "clean",
    width: int = 192,
    height: int = 128,
    keep_frames: bool = False,
    replace_scene_after: float | None = None,
    forget_scene_after: float | None = None,
) -> RenderedLoop:
    """``replace_scene_after``: from that fraction of the episode on, frames and depth come
    from a town of another seed seen from the same camera path, i.e. a model that forgets the
    scene and makes a new one up on the way back (the golden ``_forget`` assets do the same).
    ``forget_scene_after``: the world's own ``forget_scene_at_s`` defect at that fraction."""
    loop = memory_loop(name, fps=fps, seconds=seconds)
    overrides = {}
    if forget_scene_after is not None:
        overrides["forget_scene_at_s"] = seconds * forget_scene_after
    config = replace(
        world_config_for_defect(defect, **overrides),
        width=width,
        height=height,
        fps=fps,
        yaw_rate_deg=loop.yaw_rate_deg,
        forward_speed=loop.speed(STEP_M),
    )
    world = ProceduralWorld(config)
    other = (
        ProceduralWorld(replace(config, seed=config.seed + 101)) if replace_scene_after else None
    )
    keys = loop.schedule().frame_keys()
    switch = round(len(keys) * replace_scene_after) if replace_scene_after else len(keys)
    frames, poses, depth, intr = [], [], [], []
    for t, key in enumerate(keys):
        out = world.step(key)
        if other is not None:
            swapped = other.step(key)
            if t >= switch:  # same camera path, so the same true pose
                out = swapped
        if keep_frames:
            frames.append(out.image)
        poses.append(out.pose)
        d = np.asarray(out.depth, dtype=np.float32)
        k = np.asarray(out.intrinsics, dtype=np.float64).copy()
        scale = d.shape[1] / out.image.shape[1]
        k[0, 0] *= scale
        k[1, 1] *= scale
        k[0, 2] = (k[0, 2] + 0.5) * scale - 0.5
        k[1, 2] = (k[1, 2] + 0.5) * scale - 0.5
        depth.append(d)
        intr.append(k)
    return RenderedLoop(frames, keys, np.array(poses), np.array(depth), np.array(intr), fps)

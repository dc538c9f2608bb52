"""A procedural world model that obeys keystrokes: the demo model and the test oracle.

>>> from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect
>>> world = ProceduralWorld(world_config_for_defect("delay"))
>>> frame = world.step("W")          # image, true pose, exact depth, intrinsics, key

Modules: ``config`` (WorldConfig, defect presets), ``camera`` (pose convention and motion),
``scene`` (the endless object field), ``textures`` (procedural texture atlas), ``looks``
(palette and lighting of a shot, switched by hard cuts), ``render`` (column ray caster),
``depth_output`` (the depth the world reports: range, unknown pixels),
``defects`` (key response and image defects), ``world`` (the model).
"""

from streameval.worlds.procedural_world.config import (
    DEFECT_PRESETS,
    WorldConfig,
    world_config_for_defect,
)
from streameval.worlds.procedural_world.world import ProceduralWorld, WorldFrame

__all__ = [
    "DEFECT_PRESETS",
    "ProceduralWorld",
    "WorldConfig",
    "WorldFrame",
    "world_config_for_defect",
]

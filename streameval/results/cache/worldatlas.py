"""The WorldAtlas part of an episode cache on disk (``cache/worldatlas.npz``): poses and coarse
depth (``core/episode/worldatlas.py``'s ``WorldAtlasCache``).

Read back through the checked ``.npz`` layer (``inputs/npz.py``): a damaged or foreign archive
is one ``BadInputError`` naming the file and the array, never a crash deep inside a kernel.
Values are not judged here (NaN pose rows mark frames without a pose, NaN intrinsics frames
without depth): the kernels turn unusable values into a per-metric ``missing`` with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from streameval.core.atomic import savez_atomic
from streameval.core.episode.worldatlas import WorldAtlasCache
from streameval.errors import BadInputError
from streameval.inputs.npz import load_npz, member
from streameval.results.cache.closed_loop import (
    CLOSED_LOOP_DIR,
    load_closed_loop,
    save_closed_loop,
)

CACHE_FILE = "worldatlas.npz"


def save_worldatlas(atlas: WorldAtlasCache, path: Path) -> None:
    """Write ``atlas`` to the archive ``path`` (and its revisit frames beside it)."""
    arrays: dict[str, Any] = {"pose_source": np.array(atlas.pose_source)}
    if atlas.problems:
        arrays["problems"] = np.array(json.dumps(atlas.problems, sort_keys=True))
    for name in ("poses", "depth", "valid", "intrinsics"):
        value = getattr(atlas, name)
        if value is not None:
            arrays[name] = value
    savez_atomic(path, arrays)
    if atlas.closed_loop is not None:
        save_closed_loop(atlas.closed_loop, path.parent / CLOSED_LOOP_DIR)


def load_worldatlas(path: Path, frames: int) -> WorldAtlasCache:
    """Read and check the archive of an episode of ``frames`` frames."""
    data = load_npz(path)
    source = member(data, "pose_source", path, ndim=0, kind="U")
    poses = None
    if "poses" in data:
        poses = member(data, "poses", path, ndim=3, kind="f", trailing=(4, 4))
        if len(poses) != frames:
            raise BadInputError(path, f"poses: {len(poses)} rows for {frames} frames")
    depth = valid = intrinsics = None
    depth_arrays = [name for name in ("depth", "valid", "intrinsics") if name in data]
    if depth_arrays:
        if len(depth_arrays) != 3:
            raise BadInputError(path, "depth, valid and intrinsics must be saved together")
        depth = member(data, "depth", path, ndim=3, kind="f")
        valid = member(data, "valid", path, ndim=3, kind="b")
        intrinsics = member(data, "intrinsics", path, ndim=3, kind="f", trailing=(3, 3))
        if depth.shape != valid.shape or len(depth) != frames or len(intrinsics) != frames:
            raise BadInputError(
                path,
                f"depth {depth.shape}, valid {valid.shape}, intrinsics "
                f"{intrinsics.shape} for {frames} frames",
            )
    problems: dict[str, str] = {}
    if "problems" in data:
        text = str(member(data, "problems", path, ndim=0, kind="U"))
        try:
            loaded = json.loads(text)
        except ValueError:
            loaded = None
        if not isinstance(loaded, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in loaded.items()
        ):
            raise BadInputError(path, "problems: not a JSON object of strings")
        problems = loaded
    closed_loop = load_closed_loop(path.parent / CLOSED_LOOP_DIR)
    return WorldAtlasCache(str(source), poses, depth, valid, intrinsics, problems, closed_loop)

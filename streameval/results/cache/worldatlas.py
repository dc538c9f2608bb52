"""The WorldAtlas part of an episode cache (``cache/worldatlas.npz``): poses and coarse depth.

Read back through the checked ``.npz`` layer (``inputs/npz.py``): a damaged or foreign archive
is one ``BadInputError`` naming the file and the array, never a crash deep inside a kernel.
Values are not judged here (NaN pose rows mark frames without a pose, NaN intrinsics frames
without depth): the kernels turn unusable values into a per-metric ``missing`` with the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.core.atomic import savez_atomic
from streameval.errors import BadInputError
from streameval.inputs.npz import load_npz, member
from streameval.metrics.worldatlas.closed_loop_inputs import ClosedLoopFrames
from streameval.results.cache.closed_loop import (
    CLOSED_LOOP_DIR,
    load_closed_loop,
    save_closed_loop,
)

CACHE_FILE = "worldatlas.npz"


@dataclass
class WorldAtlasCache:
    """Per-frame camera-to-world poses (T, 4, 4), coarse depth (T, h, w) float16 with its
    validity mask and per-frame intrinsics (T, 3, 3); ``pose_source`` names where poses came
    from (``model``, ``vipe_sidecar``, ``cpu_estimator`` or ``none``)."""

    pose_source: str
    poses: npt.NDArray[np.float64] | None
    depth: npt.NDArray[np.float16] | None
    valid: npt.NDArray[np.bool_] | None
    intrinsics: npt.NDArray[np.float64] | None
    problems: dict[str, str] = field(default_factory=dict)
    """Unusable sidecars by what they spoil (``poses``, ``depth``), kept so that ``rescore``
    gives the same ``missing`` statuses and reasons as the run."""
    closed_loop: ClosedLoopFrames | None = None
    """The revisit pairs' frames and backend answers (``cache/closed_loop/``), None when not
    kept (an older cache, or a run that kept no frames)."""

    def save(self, path: Path) -> None:
        arrays: dict[str, Any] = {"pose_source": np.array(self.pose_source)}
        if self.problems:
            arrays["problems"] = np.array(json.dumps(self.problems, sort_keys=True))
        for name in ("poses", "depth", "valid", "intrinsics"):
            value = getattr(self, name)
            if value is not None:
                arrays[name] = value
        savez_atomic(path, arrays)
        if self.closed_loop is not None:
            save_closed_loop(self.closed_loop, path.parent / CLOSED_LOOP_DIR)

    @classmethod
    def load(cls, path: Path, frames: int) -> WorldAtlasCache:
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
        return cls(str(source), poses, depth, valid, intrinsics, problems, closed_loop)

"""The WorldAtlas part of an episode cache (``cache/worldatlas.npz``): poses and coarse depth."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.errors import BadInputError

CACHE_FILE = "worldatlas.npz"


@dataclass
class WorldAtlasCache:
    pose_source: str
    poses: npt.NDArray[np.float64] | None
    depth: npt.NDArray[np.float16] | None
    valid: npt.NDArray[np.bool_] | None
    intrinsics: npt.NDArray[np.float64] | None

    def save(self, path: Path) -> None:
        arrays: dict[str, Any] = {"pose_source": np.array(self.pose_source)}
        for name in ("poses", "depth", "valid", "intrinsics"):
            value = getattr(self, name)
            if value is not None:
                arrays[name] = value
        tmp = path.with_name(path.stem + ".tmp.npz")
        np.savez(tmp, **arrays)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> WorldAtlasCache:
        try:
            with np.load(path, allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
        except (OSError, ValueError) as exc:
            raise BadInputError(path, f"unreadable WorldAtlas cache ({exc})") from None
        return cls(
            str(data["pose_source"]),
            data.get("poses"),
            data.get("depth"),
            data.get("valid"),
            data.get("intrinsics"),
        )

"""The episode cache: what perception produced, and all that ``rescore`` needs.

Perceive once, score many: every score is a kernel over this cache. Arrays are stored
uncompressed in ``.npz`` (bit-exact round trip); ``episode.json`` holds the rest. The only
frames are Q-Align's, at 1 fps (``quality_cache``): about 210 KiB per second as PNG at
640×432 (25 MB for a two-minute episode); everything else is a few hundred kB.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.errors import BadInputError
from streameval.fits.geometry import FrameGeometry
from streameval.fits.motion_type import FitSample
from streameval.quality_cache import QualityCache
from streameval.scores_file import write_json
from streameval.worldatlas_cache import CACHE_FILE as WORLDATLAS_FILE
from streameval.worldatlas_cache import WorldAtlasCache

CACHE_FORMAT = "streameval.cache/1"
F64 = npt.NDArray[np.float64]


@dataclass
class MemoryCache:
    """What the memory metrics need (issue 3): per-frame embeddings, the cut detector's cuts,
    and the geometry of the Global Memory views — never frames.

    ``embeddings`` (T, D) float32, NaN rows for frames not embedded, None without an
    embedding backend; ``cuts`` None when the detector failed (``cut_failure`` says why) or
    none ran; ``views`` pose + depth + intrinsics at the selected view frames.
    """

    embeddings: npt.NDArray[np.float32] | None
    cuts: list[int] | None
    views: list[FrameGeometry] = field(default_factory=list)

    def save(self, path: Path) -> None:
        k = len(self.views)
        arrays: dict[str, Any] = {
            "has_embeddings": np.array(self.embeddings is not None),
            "embeddings": (
                self.embeddings if self.embeddings is not None else np.zeros((0, 0), np.float32)
            ),
            "has_cuts": np.array(self.cuts is not None),
            "cuts": np.array(self.cuts or [], dtype=np.int64),
            "view_frames": np.array([v.frame for v in self.views], dtype=np.int64),
            "view_poses": np.array([v.pose for v in self.views], dtype=np.float64).reshape(k, 4, 4),
            "view_intrinsics": np.array(
                [v.intrinsics for v in self.views], dtype=np.float64
            ).reshape(k, 3, 3),
            "view_image_sizes": np.array(
                [v.image_size for v in self.views], dtype=np.int64
            ).reshape(k, 2),
        }
        for j, v in enumerate(self.views):  # depth maps may differ in size between views
            arrays[f"view_depth_{j}"] = np.asarray(v.depth, dtype=np.float32)
        tmp = path.with_name(path.stem + ".tmp.npz")
        np.savez(tmp, **arrays)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> MemoryCache:
        try:
            with np.load(path, allow_pickle=False) as z:
                data = {key: z[key] for key in z.files}
        except (OSError, ValueError) as exc:
            raise BadInputError(path, f"unreadable memory cache ({exc})") from None
        views = [
            FrameGeometry(
                int(frame),
                data["view_poses"][j],
                data[f"view_depth_{j}"],
                data["view_intrinsics"][j],
                (int(data["view_image_sizes"][j][0]), int(data["view_image_sizes"][j][1])),
            )
            for j, frame in enumerate(data["view_frames"])
        ]
        return cls(
            embeddings=data["embeddings"] if bool(data["has_embeddings"]) else None,
            cuts=[int(c) for c in data["cuts"]] if bool(data["has_cuts"]) else None,
            views=views,
        )


@dataclass
class EpisodeCache:
    """Per-frame signals and motion-type samples of one episode.

    ``sx``/``srad``: signal i = flow from frame i to i + 2 (NaN where a frame was missing).
    ``frame_keys``: the key that conditioned each frame received (or planned, for a gap).
    ``meta``: episode identity, fps, sizes, backends and sources (provenance).
    """

    meta: dict[str, Any]
    frame_keys: list[str]
    sx: F64
    srad: F64
    fit_samples: list[FitSample] = field(default_factory=list)
    memory: MemoryCache | None = None
    worldatlas: WorldAtlasCache | None = None  # memory_loop episodes (seeds 001–004)
    quality: QualityCache | None = None

    @property
    def fps(self) -> float:
        return float(self.meta["fps"])

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        frames = np.array([s.frame for s in self.fit_samples], dtype=np.int64)
        sizes = np.array([s.u.size for s in self.fit_samples], dtype=np.int64)
        has_depth = np.array([s.invz is not None for s in self.fit_samples], dtype=bool)

        def cat(parts: list[npt.NDArray[np.float32]]) -> npt.NDArray[np.float32]:
            return np.concatenate(parts) if parts else np.zeros(0, np.float32)

        invz = cat(
            [
                s.invz if s.invz is not None else np.full(s.u.size, np.nan, np.float32)
                for s in self.fit_samples
            ]
        )
        arrays: dict[str, Any] = {
            "sx": self.sx,
            "srad": self.srad,
            "frame_keys": np.array(self.frame_keys, dtype="<U1"),
            "fit_frames": frames,
            "fit_sizes": sizes,
            "fit_has_depth": has_depth,
            "fit_x": cat([s.x for s in self.fit_samples]),
            "fit_y": cat([s.y for s in self.fit_samples]),
            "fit_u": cat([s.u for s in self.fit_samples]),
            "fit_v": cat([s.v for s in self.fit_samples]),
            "fit_invz": invz,
        }
        tmp = directory / "signals.tmp.npz"
        np.savez(tmp, **arrays)
        os.replace(tmp, directory / "signals.npz")
        if self.memory is not None:
            self.memory.save(directory / "memory.npz")
        if self.worldatlas is not None:
            self.worldatlas.save(directory / WORLDATLAS_FILE)
        if self.quality is not None:
            self.quality.save(directory)
        write_json(directory / "episode.json", {"format": CACHE_FORMAT, **self.meta})

    @classmethod
    def load(cls, directory: Path) -> EpisodeCache:
        meta_path = directory / "episode.json"
        npz_path = directory / "signals.npz"
        for p in (meta_path, npz_path):
            if not p.is_file():
                raise BadInputError(p, "missing episode cache file (was this episode finished?)")
        try:
            meta = json.loads(meta_path.read_text())
        except json.JSONDecodeError as exc:
            raise BadInputError(
                meta_path, f"not valid JSON ({exc.msg} at line {exc.lineno})"
            ) from None
        if meta.pop("format", None) != CACHE_FORMAT:
            raise BadInputError(meta_path, f"not a {CACHE_FORMAT} episode cache")
        try:
            with np.load(npz_path, allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
        except (OSError, ValueError) as exc:
            raise BadInputError(npz_path, f"unreadable cache arrays ({exc})") from None
        samples: list[FitSample] = []
        offset = 0
        for frame, size, depth in zip(
            data["fit_frames"], data["fit_sizes"], data["fit_has_depth"], strict=True
        ):
            sl = slice(offset, offset + int(size))
            offset += int(size)
            samples.append(
                FitSample(
                    frame=int(frame),
                    x=data["fit_x"][sl],
                    y=data["fit_y"][sl],
                    u=data["fit_u"][sl],
                    v=data["fit_v"][sl],
                    invz=data["fit_invz"][sl] if bool(depth) else None,
                )
            )
        memory_path = directory / "memory.npz"
        atlas_path = directory / WORLDATLAS_FILE
        return cls(
            meta=meta,
            frame_keys=[str(k) for k in data["frame_keys"]],
            sx=data["sx"].astype(np.float64, copy=False),
            srad=data["srad"].astype(np.float64, copy=False),
            fit_samples=samples,
            memory=MemoryCache.load(memory_path) if memory_path.is_file() else None,
            worldatlas=WorldAtlasCache.load(atlas_path) if atlas_path.is_file() else None,
            quality=QualityCache.load(directory),
        )

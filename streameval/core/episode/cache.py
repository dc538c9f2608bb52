"""The episode cache: what perception produced, and all that scoring needs.

Perceive once, score many: every score is a kernel over this cache, so a live run, the replay
of its recording and ``rescore`` score bit-identically. The only frames are Q-Align's, at 1 fps
(``quality``), and the closed-loop revisit frames (``worldatlas.closed_loop``); everything else
is signals, samples and geometry. ``results/cache/episode.py`` writes and reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.core.arrays import F64
from streameval.core.episode.geometry import FrameGeometry
from streameval.core.episode.motion import FitSample
from streameval.core.episode.quality import QualityCache
from streameval.core.episode.timing import TimingCache
from streameval.core.episode.worldatlas import WorldAtlasCache


@dataclass
class MemoryCache:
    """What the memory metrics need (docs/methods.md#memory-metrics): per-frame embeddings, the
    cut detector's cuts, and the geometry of the Global Memory views — never frames.

    ``embeddings`` (T, D) float32, NaN rows for frames not embedded, None without an
    embedding backend; ``cuts`` None when the detector failed (``cut_failure`` says why) or
    none ran; ``views`` pose + depth + intrinsics at the selected view frames.
    """

    embeddings: npt.NDArray[np.float32] | None
    cuts: list[int] | None
    views: list[FrameGeometry] = field(default_factory=list)


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
    worldatlas: WorldAtlasCache | None = None  # memory_loop episodes (WorldAtlas)
    quality: QualityCache | None = None
    timing: TimingCache | None = None  # live sessions: arrivals and action changes (real time)

    @property
    def fps(self) -> float:
        return float(self.meta["fps"])

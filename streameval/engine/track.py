"""What the pipeline keeps of an episode while it runs: signals, keys, fit samples.

Growable float64 arrays (amortised doubling) so memory is a few bytes per frame; the only
frames kept are Q-Align's, one per second, shrunk to 448 px (``quality_cache``).
``to_cache`` hands the exact arrays to scoring, which is why final scores equal ``rescore``
bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.constants import FLOW_STRIDE
from streameval.core.growable import GrowableArray
from streameval.engine.worldatlas_track import WorldAtlasTrack
from streameval.metrics.fits.motion_type import FitSample
from streameval.results.cache.episode import EpisodeCache, MemoryCache

F64 = npt.NDArray[np.float64]


@dataclass
class GrowableRows:
    """Row ``i`` = frame ``i``'s embedding (or imaging statistics); frames never seen stay
    NaN (amortised growth)."""

    dtype: type[np.floating[Any]] = np.float32
    _data: npt.NDArray[Any] | None = None
    _size: int = 0

    def set(self, index: int, row: npt.NDArray[Any]) -> None:
        if self._data is None:
            self._data = np.full((256, row.size), np.nan, dtype=self.dtype)
        if index >= self._data.shape[0]:
            grown = np.full(
                (max(index + 1, 2 * self._data.shape[0]), self._data.shape[1]), np.nan, self.dtype
            )
            grown[: self._size] = self._data[: self._size]
            self._data = grown
        self._data[index] = row
        self._size = max(self._size, index + 1)

    def view(self, n_frames: int) -> npt.NDArray[Any] | None:
        """The first ``n_frames`` rows (NaN-padded), or None when nothing was set."""
        if self._data is None:
            return None
        out = np.full((n_frames, self._data.shape[1]), np.nan, dtype=self.dtype)
        n = min(n_frames, self._size)
        out[:n] = self._data[:n]
        return out


@dataclass
class EpisodeTrack:
    """Per-episode state the pipeline accumulates."""

    meta: dict[str, Any]
    sx: GrowableArray = field(default_factory=lambda: GrowableArray(np.float64))
    srad: GrowableArray = field(default_factory=lambda: GrowableArray(np.float64))
    frame_keys: list[str] = field(default_factory=list)
    fit_samples: list[FitSample] = field(default_factory=list)
    depth_frames_used: int = 0
    embeddings: GrowableRows = field(default_factory=GrowableRows)
    statistics: GrowableRows = field(default_factory=lambda: GrowableRows(np.float64))
    quality_frames: dict[int, npt.NDArray[np.uint8]] = field(default_factory=dict)
    worldatlas: WorldAtlasTrack | None = None  # memory_loop episodes only

    def set_frame_key(self, index: int, key: str, fill: Callable[[int], str]) -> bool:
        """Record the key of frame ``index``; a frame skipped before it (dropped or rejected)
        gets ``fill(its index)``. True when a key already recorded (a gap's fill) changed:
        incremental state built on it is stale."""
        while len(self.frame_keys) < index:
            self.frame_keys.append(fill(len(self.frame_keys)))
        if len(self.frame_keys) == index:
            self.frame_keys.append(key)
            return False
        changed = self.frame_keys[index] != key
        self.frame_keys[index] = key
        return changed

    def pad_to(self, n_frames: int, fill: Callable[[int], str]) -> None:
        """Extend the episode to ``n_frames`` frames received, the ones never perceived at its
        end (a live source's trailing drops) keyed by ``fill`` and their signals missing (NaN),
        as a dropped frame inside the episode is: its segments keep their real ends."""
        while len(self.frame_keys) < n_frames:
            self.frame_keys.append(fill(len(self.frame_keys)))
        n_signals = max(0, len(self.frame_keys) - FLOW_STRIDE)
        for signal in (self.sx, self.srad):
            if len(signal) < n_signals:
                signal.extend(np.full(n_signals - len(signal), np.nan))

    def replace_fit_samples(self, kept: list[FitSample]) -> bool:
        """Keep only ``kept`` (a subset of the fit samples); True when any went."""
        if len(kept) == len(self.fit_samples):
            return False
        went = {s.frame for s in self.fit_samples} - {s.frame for s in kept}
        self.depth_frames_used -= sum(
            1 for s in self.fit_samples if s.frame in went and s.invz is not None
        )
        self.fit_samples = kept
        return True

    def to_cache(
        self, extra_meta: dict[str, Any] | None = None, memory: MemoryCache | None = None
    ) -> EpisodeCache:
        n_signals = max(0, len(self.frame_keys) - 2)
        sx = self.sx.view()[:n_signals].astype(np.float64)
        srad = self.srad.view()[:n_signals].astype(np.float64)
        return EpisodeCache(
            meta={**self.meta, **(extra_meta or {})},
            frame_keys=list(self.frame_keys),
            sx=sx,
            srad=srad,
            fit_samples=list(self.fit_samples),
            memory=memory,
            worldatlas=(
                self.worldatlas.to_cache(len(self.frame_keys))
                if self.worldatlas is not None
                else None
            ),
        )

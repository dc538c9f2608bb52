"""What the quality metrics need from an episode (docs/methods.md#quality-metrics): the frames
Q-Align samples at 1 fps, the CPU imaging statistics of every frame, and what the Q-Align
backend answered at episode end.

Scoring is a kernel over these (``metrics/quality/episode.py``); ``results/cache/quality.py``
stores them (the frames as lossless PNG) so that ``rescore`` needs no video.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.core.arrays import Image


@dataclass
class QualityRatings:
    """The quality backend's answers: ``logits[task]`` (5 floats, ``RATING_WORDS`` order) for
    the whole video, ``segment_logits[task]`` one such list per drift segment."""

    backend: str
    logits: dict[str, list[float]] = field(default_factory=dict)
    segment_logits: dict[str, list[list[float]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "logits": self.logits,
            "segment_logits": self.segment_logits,
        }


@dataclass
class QualityCache:
    """``frames``: frame index -> RGB frame at 1 fps (a cache read back decodes each when first
    read); ``statistics`` (T, 5) float64 or None; ``ratings`` None when no quality backend ran;
    ``failure`` why it failed, if it did."""

    frames: MutableMapping[int, Image] = field(default_factory=dict)
    statistics: npt.NDArray[np.float64] | None = None
    ratings: QualityRatings | None = None
    failure: str | None = None

"""What a memory_loop episode keeps for the closed-loop memory metrics: the revisit pairs' frames
and what the backends answered for them (docs/methods.md#closed-loop-memory-metrics).

Apart from the kernels (``metrics/worldatlas/closed_loop_scores.py``) so that the results layer
can read and write it without OpenCV (``streameval table`` and ``rescore`` load no heavy
library until they score).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from streameval.core.arrays import F64, Image


@dataclass
class ClosedLoopFrames:
    """What an episode keeps for the closed-loop metrics (``cache/closed_loop/``).

    ``pairs`` (P, 2) first/revisit frame indices of the scored pairs, in the order of
    ``closed_loop_pairs``; ``frames`` the RGB frames of those indices (longer side at most
    ``frame_side``); ``intrinsics`` per kept frame, at the kept frame's size (absent: the
    source sent none). ``features`` (P, 2, D): the appearance backend's vectors of the first
    frame and of the revisit frame resized to it, None without a backend (``feature_problem``
    says why); ``gram`` (P,): the Gram backend's texture distances, None without one.
    """

    pairs: NDArray[np.int64]
    frames: dict[int, Image]
    frame_side: int
    intrinsics: dict[int, F64] = field(default_factory=dict)
    features: NDArray[np.float32] | None = None
    feature_backend: str | None = None
    feature_problem: str | None = None
    gram: F64 | None = None
    gram_backend: str | None = None
    gram_problem: str | None = None

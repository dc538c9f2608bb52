"""The WorldAtlas part of a memory_loop episode: per-frame poses and coarse depth, and the
revisit frames the closed-loop metrics score (docs/methods.md#worldatlas-memory_loop-metrics).

Values are not judged here (NaN pose rows mark frames without a pose, NaN intrinsics frames
without depth): the kernels turn unusable values into a per-metric ``missing`` with the reason.
Stored as ``cache/worldatlas.npz`` by ``results/cache/worldatlas.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from streameval.core.episode.closed_loop import ClosedLoopFrames


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

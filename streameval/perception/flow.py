"""Dense optical flow backends.

The CPU default is OpenCV DIS (FAST preset): ~4–5 ms per 640×432 pair here and accurate to ~1 %
on combined shift + zoom (ENVIRONMENT.md), where ULTRAFAST is biased. GPU backends
(SEA-RAFT/RAFT) plug in behind the same interface.
"""

from __future__ import annotations

from typing import Protocol

import cv2
import numpy as np
import numpy.typing as npt

from streameval.registry import Registry

Flow = npt.NDArray[np.float32]  # (H, W, 2): u (x), v (y) in analysis pixels


class FlowBackend(Protocol):
    """Flow from ``prev`` to ``nxt`` (grayscale uint8 analysis frames)."""

    name: str

    def __call__(self, prev: npt.NDArray[np.uint8], nxt: npt.NDArray[np.uint8]) -> Flow: ...


_PRESETS = {
    "ultrafast": cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST,
    "fast": cv2.DISOPTICAL_FLOW_PRESET_FAST,
    "medium": cv2.DISOPTICAL_FLOW_PRESET_MEDIUM,
}


class DisFlow:
    """OpenCV DIS optical flow. Deterministic: same frames -> bit-identical flow.

    One instance per session: the OpenCV object keeps scratch buffers and is not shared
    across threads.
    """

    def __init__(self, preset: str = "fast") -> None:
        if preset not in _PRESETS:
            raise ValueError(f"unknown DIS preset {preset!r} (known: {', '.join(_PRESETS)})")
        self.name = f"dis-{preset}"
        self._dis = cv2.DISOpticalFlow_create(_PRESETS[preset])  # type: ignore[attr-defined]

    def __call__(self, prev: npt.NDArray[np.uint8], nxt: npt.NDArray[np.uint8]) -> Flow:
        # A fresh output array each call: passing a reused buffer to DIS.calc crashed
        # OpenCV 5.0 (segfault) in a multi-threaded run.
        flow: Flow = self._dis.calc(prev, nxt, None)
        return flow


FLOW_BACKENDS = Registry("flow")
FLOW_BACKENDS.register("dis-fast", "streameval.perception.flow:dis_fast")
FLOW_BACKENDS.register("dis-medium", "streameval.perception.flow:dis_medium")
FLOW_BACKENDS.register("dis-ultrafast", "streameval.perception.flow:dis_ultrafast")


def dis_fast() -> DisFlow:
    return DisFlow("fast")


def dis_medium() -> DisFlow:
    return DisFlow("medium")


def dis_ultrafast() -> DisFlow:
    return DisFlow("ultrafast")


def create_flow_backend(name: str) -> FlowBackend:
    backend: FlowBackend = FLOW_BACKENDS.create(name)
    return backend

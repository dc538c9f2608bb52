"""Dense optical flow backends.

The CPU default is OpenCV DIS (FAST preset): ~4–5 ms per 640×432 pair here and accurate to ~1 %
on combined shift + zoom (ENVIRONMENT.md), where ULTRAFAST is biased. Network backends, loaded
only when chosen (torch stays out of ``import streameval``): ``raft[:FILE]`` / ``raft-small``
(our RAFT with torchvision's weights, ``raft_flow.py``) and ``sea-raft:CHECKOUT`` (the
reference's network from a local SEA-RAFT checkout, ``sea_raft_flow.py``).

Every backend returns the flow in pixels of the analysis frame it is given (the unit Sx/Srad
are in). A backend whose network wants colour says ``input = "rgb"`` and gets the colour
analysis frame (the reference hands its network the resized colour frame); without that
attribute it gets the grey one. An optional ``provenance`` mapping (weights file and digest,
device, iterations) is recorded beside its name in scores.json as ``flow_<key>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Protocol

import cv2
import numpy as np
import numpy.typing as npt

from streameval.core.registry import backend_registry, split_spec
from streameval.errors import BadInputError

Flow = npt.NDArray[np.float32]  # (H, W, 2): u (x), v (y) in analysis pixels


class FlowBackend(Protocol):
    """Flow from ``prev`` to ``nxt`` (uint8 analysis frames: grey, or RGB when the backend's
    ``input`` is ``"rgb"``)."""

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


FLOW_BACKENDS = backend_registry("flow backend")
FLOW_BACKENDS.register("dis-fast", "streameval.perception.flow:dis_fast")
FLOW_BACKENDS.register("dis-medium", "streameval.perception.flow:dis_medium")
FLOW_BACKENDS.register("dis-ultrafast", "streameval.perception.flow:dis_ultrafast")
FLOW_BACKENDS.register("raft", "streameval.perception.raft_flow:raft")
FLOW_BACKENDS.register("raft-small", "streameval.perception.raft_flow:raft_small")
FLOW_BACKENDS.register("sea-raft", "streameval.perception.sea_raft_flow:sea_raft")


def dis_fast() -> DisFlow:
    return DisFlow("fast")


def dis_medium() -> DisFlow:
    return DisFlow("medium")


def dis_ultrafast() -> DisFlow:
    return DisFlow("ultrafast")


def create_flow_backend(spec: str) -> FlowBackend:
    """``name`` or ``name:WEIGHTS`` (``raft:/models/raft_large.pth``, ``sea-raft:/src/SEA-RAFT``);
    network backends raise BackendUnavailableError naming what is missing."""
    name, kwargs = split_spec(spec)
    if kwargs and name.startswith("dis-"):
        raise BadInputError(spec, f"flow backend {name!r} takes no weights file")
    backend: FlowBackend = FLOW_BACKENDS.create(name, **kwargs)
    return backend


def flow_input(backend: FlowBackend) -> Literal["gray", "rgb"]:
    """Which analysis frame ``backend`` takes (grey unless it says ``input = "rgb"``)."""
    return "rgb" if getattr(backend, "input", "gray") == "rgb" else "gray"


def flow_provenance(backend: FlowBackend) -> dict[str, str]:
    """``{"flow": name, "flow_<key>": value, ...}`` for scores.json's ``backends``."""
    out = {"flow": backend.name}
    extra = getattr(backend, "provenance", None)
    if isinstance(extra, Mapping):
        out.update({f"flow_{k}": str(v) for k, v in extra.items()})
    return out

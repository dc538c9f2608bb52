"""Dense optical flow backends.

The CPU default is OpenCV DIS (FAST preset): ~4–5 ms per 640×432 pair here and accurate to ~1 %
on textured frames under a known combined shift + zoom, where ULTRAFAST is biased (measured
when the default was chosen). Network backends, loaded only when chosen (torch stays out of
``import streameval``): ``raft[:FILE]`` / ``raft-small`` (our RAFT with torchvision's weights,
``raft_flow.py``) and ``sea-raft:CHECKOUT`` (the reference's network from a local SEA-RAFT
checkout, ``sea_raft_flow.py``).

Every backend returns the flow in pixels of the analysis frame it is given (the unit Sx/Srad
are in). A backend whose network wants colour says ``input = "rgb"`` and gets the colour
analysis frame (the reference hands its network the resized colour frame); without that
attribute it gets the grey one. An optional ``provenance`` mapping (weights file and digest,
device, iterations) is recorded beside its name in scores.json as ``flow_<key>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Literal, Protocol

import cv2
import numpy as np
import numpy.typing as npt

from streameval.core.arrays import F32, Flow
from streameval.core.registry import backend_registry, split_spec
from streameval.errors import BadInputError


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


# A pair whose global shift (phase correlation of the quarter-size frames) exceeds this many
# analysis pixels is also run from that shift, and the flow that explains the pair better is
# kept. DIS's coarse-to-fine search starts at zero; fine, foreshortened texture (a floor)
# vanishes at its coarsest scales, and at ~35 px it locked onto a wrong match there (an OpenGL
# room's floor read a 35 px turn as -25 px, mean endpoint error 16 px; 0.47 px from the
# shift). Below it, DIS runs as before.
DIS_PRIOR_MIN_PX = 12.0
# Phase correlation's peak response below this is no shift to start from (a cut, a still).
DIS_PRIOR_MIN_RESPONSE = 0.05
_PRIOR_SCALE = 4


def _quarter_size(frame: npt.NDArray[np.uint8]) -> tuple[int, int]:
    h, w = frame.shape[:2]
    return max(8, w // _PRIOR_SCALE), max(8, h // _PRIOR_SCALE)


def quarter_grey(frame: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    """The frame ``global_shift`` correlates: grey, area-resized to a quarter, float32."""
    grey = frame if frame.ndim == 2 else cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
    small = cv2.resize(grey, _quarter_size(frame), interpolation=cv2.INTER_AREA)
    return np.asarray(small, np.float32)


def global_shift(
    prev: npt.NDArray[np.uint8],
    nxt: npt.NDArray[np.uint8],
    quarter: Callable[[npt.NDArray[np.uint8]], npt.NDArray[np.float32]] = quarter_grey,
) -> tuple[float, float] | None:
    """The pair's dominant translation in analysis pixels (phase correlation of the grey
    frames at a quarter size), or None when its peak is too weak to trust or the shift is past
    a quarter of the frame (phase correlation wraps at half of it). ``quarter``: how a frame's
    ``quarter_grey`` is had (``DisFlow`` keeps the last few)."""
    h, w = prev.shape[:2]
    size = _quarter_size(prev)
    (dx, dy), response = cv2.phaseCorrelate(quarter(prev), quarter(nxt))
    if not response >= DIS_PRIOR_MIN_RESPONSE or abs(dx) > size[0] / 4 or abs(dy) > size[1] / 4:
        return None
    return float(dx) * w / size[0], float(dy) * h / size[1]


@lru_cache(maxsize=4)
def _every_second_pixel(height: int, width: int) -> tuple[F32, F32]:
    """The coordinates of every 2nd pixel (ys, xs) that ``warp_error`` samples, made once per
    frame size (read-only)."""
    ys, xs = np.mgrid[0:height:2, 0:width:2].astype(np.float32)
    ys.setflags(write=False)
    xs.setflags(write=False)
    return ys, xs


def warp_error(prev: npt.NDArray[np.uint8], nxt: npt.NDArray[np.uint8], flow: Flow) -> float:
    """Mean absolute grey difference between ``prev`` and ``nxt`` sampled along ``flow``
    (every 2nd pixel): how well the flow explains the pair."""
    p = prev[::2, ::2].astype(np.float32)
    ys, xs = _every_second_pixel(prev.shape[0], prev.shape[1])
    f = flow[::2, ::2]
    warped = cv2.remap(
        nxt, xs + f[..., 0], ys + f[..., 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
    )
    return float(np.mean(np.abs(warped.astype(np.float32) - p)))


class DisFlow:
    """OpenCV DIS optical flow. Deterministic: same frames -> bit-identical flow.

    A pair that moves more than ``DIS_PRIOR_MIN_PX`` as a whole is run twice, from rest and
    from its global shift, and the flow with the smaller ``warp_error`` is kept
    (docs/methods.md#cpu-defaults-and-backends); the shifted start runs on a second DIS
    object, since DIS keeps the last flow it was given as a start. One instance per session:
    the OpenCV objects keep scratch buffers and are not shared across threads.

    A frame of a stride-2 stream is the second frame of one pair and the first of the pair
    two frames on, so the quarter-size grey of a **read-only** frame that owns its data (the
    pipeline's analysis frames) is kept for its next pair: half of ``global_shift``'s resizes
    (0.16 ms of its 0.54 ms a pair here). A writable array or a view is resized every time: it
    may be refilled.
    """

    QUARTERS_KEPT = 4  # frames i-2 .. i+1 of a stride-2 stream, the fit's one-frame pairs too

    def __init__(self, preset: str = "fast") -> None:
        if preset not in _PRESETS:
            raise ValueError(f"unknown DIS preset {preset!r} (known: {', '.join(_PRESETS)})")
        self.name = f"dis-{preset}"
        self._preset = preset
        self._dis = cv2.DISOpticalFlow_create(_PRESETS[preset])  # type: ignore[attr-defined]
        self._from_shift = cv2.DISOpticalFlow_create(_PRESETS[preset])  # type: ignore[attr-defined]
        # id(frame) -> (frame, its quarter_grey); the frame is held so that its id stays its own
        self._quarters: dict[int, tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32]]] = {}

    def fresh(self) -> DisFlow:
        """Another instance of the same preset, for another thread (the perceiver's finishing
        half): DIS from rest depends only on the pair, never on the instance's past calls."""
        return DisFlow(self._preset)

    def _quarter(self, frame: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        if frame.flags.writeable or not frame.flags.owndata:
            return quarter_grey(frame)
        kept = self._quarters.get(id(frame))
        if kept is not None and kept[0] is frame:
            return kept[1]
        small = quarter_grey(frame)
        if len(self._quarters) >= self.QUARTERS_KEPT:
            del self._quarters[next(iter(self._quarters))]  # the oldest
        self._quarters[id(frame)] = (frame, small)
        return small

    def __call__(self, prev: npt.NDArray[np.uint8], nxt: npt.NDArray[np.uint8]) -> Flow:
        # A fresh output array each call: passing a reused buffer to DIS.calc crashed
        # OpenCV 5.0 (segfault) in a multi-threaded run.
        flow: Flow = self._dis.calc(prev, nxt, None)
        shift = global_shift(prev, nxt, self._quarter)
        if shift is None or float(np.hypot(*shift)) <= DIS_PRIOR_MIN_PX:
            return flow
        start = np.empty((*prev.shape[:2], 2), np.float32)
        start[..., 0], start[..., 1] = shift
        moved: Flow = self._from_shift.calc(prev, nxt, start)
        if warp_error(prev, nxt, moved) < warp_error(prev, nxt, flow):
            return moved
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

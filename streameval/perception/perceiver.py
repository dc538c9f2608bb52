"""Per-episode perception: frames in, flow signals and motion-type samples out.

Stateful only over the last few frames (stride-2 flow needs frames i and i + 2), so memory
does not grow with the episode. Runs off the event loop (the pipeline calls it in a worker
thread); one instance per episode, never shared between threads.
"""

from __future__ import annotations

import math
import queue
import threading
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from streameval.constants import ANALYSIS_HEIGHT, ANALYSIS_WIDTH, DEFAULT_FPS, FLOW_STRIDE
from streameval.core.arrays import Image
from streameval.core.episode.motion import FitSample
from streameval.core.events import FrameEvent
from streameval.errors import FrameRejectedError
from streameval.metrics.fits.camera import DEFAULT_CAMERA, Camera, camera_after_frame
from streameval.metrics.quality.imaging import detail_stride, frame_statistics
from streameval.metrics.quality.kernels import is_one_fps_frame
from streameval.perception.analysis import rgb_to_gray, to_analysis_rgb
from streameval.perception.depth import DepthBackend
from streameval.perception.flow import FlowBackend, flow_input
from streameval.perception.memory import MemoryPerception
from streameval.perception.motion_samples import (
    Texture,
    needs_short_pair,
    sample_fit,
    texture_grid,
    turn_to_warp_out,
    warped_out_flow,
)
from streameval.perception.signals import flow_signals
from streameval.protocol.keys import FAMILY
from streameval.results.cache.quality import shrink_for_quality

MAX_PENDING_TURNS = 480
"""Depth-free fit frames of a wall-clock episode whose turn is warped out only once the fit
picks them (``Perceiver``), at most: 30 s of 16 fps, one analysis frame each (~0.27 MB grey).
Past it a frame is warped out at once, as a planned episode's fit frames are."""


@dataclass(frozen=True, slots=True)
class _PendingTurn:
    """What warping a fit frame's turn out needs (``warped_out_flow``), kept until the fit
    picks the frame or leaves it: the pair's frames, the turn, the texture, and whether the
    sample is of the one-frame pair doubled (a fast pair)."""

    prev: Image
    nxt: Image
    omega: float
    doubled: bool
    texture: Texture


def _signal_units(flow: npt.NDArray[np.float32], doubled: bool) -> npt.NDArray[np.float32]:
    """A fit flow in the signal pair's units: a fast pair's one-frame flow doubled."""
    return 2.0 * flow if doubled else flow


@dataclass(frozen=True, slots=True)
class PerceptionOutput:
    """Signals completed by one frame: ``start`` is the first signal index in ``sx``/``srad``.

    Usually one signal (index i − 2 for frame i); a gap before the frame adds NaN signals.
    """

    start: int
    sx: list[float]
    srad: list[float]
    fit_sample: FitSample | None = None
    depth_used: bool = False
    embedding: npt.NDArray[np.float32] | None = None  # appearance row of this frame
    depth_from_network: bool = False  # the fit sample's depth came from the depth backend
    statistics: npt.NDArray[np.float64] | None = None  # imaging statistics row of this frame
    quality_frame: npt.NDArray[np.uint8] | None = None  # kept for Q-Align (a 1-fps frame)
    derotated_samples: tuple[FitSample, ...] = ()  # earlier fit frames, their turn warped out


@dataclass(slots=True)
class FlowStep:
    """A frame between ``Perceiver.flow_step`` and ``Perceiver.finish``: ``sx``/``srad`` hold
    its gap signals (and a NaN when the pair's first frame is missing); ``flow`` is the pair's
    flow when there is one, its signals still to compute."""

    event: FrameEvent
    image: npt.NDArray[np.uint8]
    gray: Image
    start: int
    sx: list[float]
    srad: list[float]
    target: int  # the signal this frame completes (i - FLOW_STRIDE)
    flow: npt.NDArray[np.float32] | None = None
    fit: bool = False  # the target frame is sampled for the motion-type fit
    fit_flow: npt.NDArray[np.float32] | None = None  # the sample's flow when not ``flow``
    fit_texture: Texture | None = None  # depth-free: where u and v can be measured
    fit_derotated: bool = True  # depth-free: False while its turn is still to warp out
    # depth-free: the pair's frames and the one between them (``finish`` samples the fit)
    fit_frames: tuple[Image, Image, Image | None] | None = None
    derotated_samples: tuple[FitSample, ...] = ()  # earlier fit frames, warped out now
    depth: npt.NDArray[np.float32] | None = None  # the target frame's, for its fit sample
    from_network: bool = False  # that depth came from the depth backend


def check_image(image: object, where: str) -> npt.NDArray[np.uint8]:
    """The frame as an H×W×3 uint8 array, or FrameRejectedError naming ``where``."""
    if not isinstance(image, np.ndarray):
        raise FrameRejectedError(f"{where}: frame is {type(image).__name__}, not a numpy array")
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise FrameRejectedError(
            f"{where}: frame has shape {image.shape} dtype {image.dtype}, expected H×W×3 uint8"
        )
    if image.shape[0] < 16 or image.shape[1] < 16:
        raise FrameRejectedError(f"{where}: frame {image.shape[1]}×{image.shape[0]} is too small")
    return image


@dataclass
class Perceiver:
    """Turns the frames of one episode, in index order, into signals.

    ``fit_frames``: frames whose flow is sampled for the motion-type fit (from the plan);
    ``fit_every_frame``: every frame is (a wall-clock episode, whose segments' ends are known
    only when they close: the pipeline keeps the picks).

    A wall-clock episode's depth-free fit frame that turns is sampled from its plain flow at
    first (``derotated=False``, what live scores read) and keeps its pair; the turn is warped
    out (docs/methods.md#motion-type-fit, "Derotation") only for the frames the fit picks, when
    the pipeline names them (``derotate``, read at the next frame; ``derotate_now`` once the
    frames are all in). Why: one more flow and a warp on every lateral and yaw frame cost a
    live session ~40 % more CPU for the one frame a second the fit keeps (a 16 s depth-free
    session: 8.8 s at once, 6.6–6.9 s deferred, 6.5–6.7 s without derotation). Same
    arithmetic, same frames as warping at once, so the samples are bit-identical to a
    replay's.
    """

    flow: FlowBackend
    fit_frames: frozenset[int]
    width: int = ANALYSIS_WIDTH
    height: int = ANALYSIS_HEIGHT
    memory: MemoryPerception | None = None
    depth_backend: DepthBackend | None = None
    fps: float = DEFAULT_FPS  # the episode's frame rate: which frames are Q-Align's 1-fps frames
    imaging: bool = True  # CPU imaging statistics (metrics.quality.imaging)
    keep_quality_frames: bool = True  # the 1-fps frames, so quality needs no video later
    fit_every_frame: bool = False
    # the geometry's camera (metrics.fits.camera): the case's at the start, the model's from
    # its first frame that states intrinsics; WorldMark's 70° without either
    camera: Camera = DEFAULT_CAMERA
    _estimated: set[int] = field(default_factory=set)  # fit frames with network depth
    _fit_flow: FlowBackend | None = None  # the finishing half's (``_finish_flow``)
    _flow_lock: threading.Lock = field(default_factory=threading.Lock)
    _recent: dict[int, Image] = field(default_factory=dict)  # grey, or RGB for an RGB backend
    _keys: dict[int, str] = field(default_factory=dict)  # of the frames in _recent
    _depth: dict[int, npt.NDArray[np.float32]] = field(default_factory=dict)
    _next_signal: int = 0
    _last_index: int = -1
    _scratch: npt.NDArray[np.float32] | None = None
    _pending: dict[int, _PendingTurn] = field(default_factory=dict)
    _requests: queue.SimpleQueue[tuple[frozenset[int], frozenset[int]]] = field(
        default_factory=queue.SimpleQueue
    )

    def _fits(self, frame: int) -> bool:
        if self.fit_every_frame:  # every lateral or yaw frame (the only ones fitted)
            return FAMILY.get(self._keys.get(frame, "")) in ("lat", "yaw")
        return frame in self.fit_frames

    def process(self, event: FrameEvent) -> PerceptionOutput:
        """``finish(flow_step(event))``: one frame, both halves on the calling thread."""
        return self.finish(self.flow_step(event))

    def _flow(self, prev: Image, nxt: Image) -> npt.NDArray[np.float32]:
        """The flow half's flow: under ``_flow_lock`` when the finishing half shares the
        backend (one that cannot be copied, ``_finish_flow``)."""
        if self._fit_flow is not None and self._fit_flow is not self.flow:
            return self.flow(prev, nxt)
        with self._flow_lock:
            return self.flow(prev, nxt)

    def _finish_flow(self, prev: Image, nxt: Image) -> npt.NDArray[np.float32]:
        """The finishing half's flow (the depth-free fit's one-frame pairs and warped-out
        turns): a copy of the backend of its own when the backend makes one (``fresh()``, as
        DIS does: same arithmetic, its own scratch buffers), else the flow half's backend
        under ``_flow_lock``."""
        if self._fit_flow is None:
            fresh = getattr(self.flow, "fresh", None)
            self._fit_flow = fresh() if callable(fresh) else self.flow
        if self._fit_flow is not self.flow:
            return self._fit_flow(prev, nxt)
        with self._flow_lock:
            return self.flow(prev, nxt)

    def flow_step(self, event: FrameEvent) -> FlowStep:
        """The first half of a frame: checks, the analysis frames, the flow of the signal it
        completes (the perceiver's frame history is this half's alone)."""
        i = event.index
        if i <= self._last_index:
            raise FrameRejectedError(f"frame {i}: out of order (after frame {self._last_index})")
        image = check_image(event.image, f"frame {i}")
        self._last_index = i
        rgb = to_analysis_rgb(image, self.width, self.height)
        gray = rgb_to_gray(rgb)
        # read-only: nothing writes an analysis frame, and DisFlow keeps the quarter-size grey
        # of a read-only frame for the frame's next pair
        gray.setflags(write=False)
        flow_frame = rgb if flow_input(self.flow) == "rgb" else gray
        self._recent[i] = flow_frame
        self._keys[i] = event.key
        self.camera = camera_after_frame(self.camera, event.intrinsics, image.shape[1])
        if self._fits(i):
            if event.depth is not None:
                self._depth[i] = np.asarray(event.depth, dtype=np.float32)
            elif self.depth_backend is not None:
                # docs/methods.md#motion-type-fit order: depth from the frame, else a sidecar, else
                # a depth network
                self._depth[i] = np.asarray(self.depth_backend.depth(image), dtype=np.float32)
                self._estimated.add(i)
        target = i - FLOW_STRIDE
        sx: list[float] = []
        srad: list[float] = []
        # Signals whose second frame never arrived (dropped or missing) are gaps.
        while self._next_signal < target:
            sx.append(math.nan)
            srad.append(math.nan)
            self._next_signal += 1
        start = self._next_signal - len(sx)
        step = FlowStep(event, image, gray, start, sx, srad, target)
        if target >= 0:
            prev = self._recent.get(target)
            if prev is None:
                sx.append(math.nan)
                srad.append(math.nan)
            else:
                step.flow = self._flow(prev, flow_frame)
                if self._fits(target):
                    step.fit = True
                    step.depth = self._depth.pop(target, None)
                    if step.depth is None:
                        step.fit_frames = (prev, flow_frame, self._recent.get(target + 1))
            self._next_signal = target + 1
        for old in [k for k in self._recent if k <= target]:
            del self._recent[old]
            del self._keys[old]
        for old in [k for k in self._depth if k < target]:
            del self._depth[old]
        step.from_network = step.depth is not None and target in self._estimated
        self._estimated.discard(target)
        return step

    def _depth_free_fit_flow(self, step: FlowStep) -> None:
        """The flow a depth-free fit frame is sampled from (docs/methods.md#motion-type-fit): a
        fast pair's one-frame pair instead, doubled to stay in the signal pair's units, and
        either way with its turn warped out and put back as the exact field
        (``turn_to_warp_out``, ``warped_out_flow``); and the texture of the pair's first frame
        (``texture_grid``). A wall-clock episode keeps the pair to warp out later (class
        docstring) and samples the plain flow meanwhile. Runs in the finishing half (its extra
        flows on ``_finish_flow``), overlapped with the next frames' flow."""
        assert step.flow is not None and step.fit_frames is not None
        target = step.target
        prev, nxt, middle = step.fit_frames
        texture = texture_grid(prev)
        pair, doubled = step.flow, False
        if middle is not None and needs_short_pair(step.flow):
            pair, nxt, doubled = self._finish_flow(prev, middle), middle, True
        step.fit_texture = texture
        focal = self.camera.focal(pair.shape[1])
        omega = turn_to_warp_out(pair, texture, focal)
        if omega is None:  # nothing to warp out: the sample is final now
            step.fit_flow = _signal_units(pair, doubled)
        elif self.fit_every_frame and len(self._pending) < MAX_PENDING_TURNS:
            self._pending[target] = _PendingTurn(prev, nxt, omega, doubled, texture)
            step.fit_flow = _signal_units(pair, doubled)
            step.fit_derotated = False
        else:
            out = warped_out_flow(self._finish_flow, prev, nxt, omega, focal)
            step.fit_flow = _signal_units(out, doubled)

    def _warped_out_sample(self, frame: int) -> FitSample:
        """The sample ``flow_step`` + ``finish`` give a planned episode's fit frame ``frame``."""
        turn = self._pending.pop(frame)
        focal = self.camera.focal(turn.prev.shape[1])
        out = warped_out_flow(self._finish_flow, turn.prev, turn.nxt, turn.omega, focal)
        return sample_fit(
            frame, _signal_units(out, turn.doubled), None, derotated=True, texture=turn.texture
        )

    def derotate(self, frames: frozenset[int], keep: frozenset[int]) -> None:
        """The pipeline's word (any thread): warp out the turns of ``frames`` (fit picks that no
        longer change) and forget the pairs of frames not in ``keep``; done by the finishing
        half at its next frame, the samples coming out with that frame's output."""
        self._requests.put((frames, keep))

    def _answer_requests(self) -> tuple[FitSample, ...]:
        out: list[FitSample] = []
        while True:
            try:
                frames, keep = self._requests.get_nowait()
            except queue.Empty:
                return tuple(out)
            out.extend(self._warped_out_sample(f) for f in sorted(frames & self._pending.keys()))
            for f in [f for f in self._pending if f not in keep]:
                del self._pending[f]

    def derotate_now(self, frames: frozenset[int]) -> tuple[FitSample, ...]:
        """At the episode's end, once the perception threads are done: the turns of the fit's
        final picks ``frames`` still pending (earlier words included), warped out here."""
        self._requests = queue.SimpleQueue()  # their frames are pending still, or were answered
        done = tuple(self._warped_out_sample(f) for f in sorted(frames & self._pending.keys()))
        self._pending.clear()
        return done

    def finish(self, step: FlowStep) -> PerceptionOutput:
        """The second half, in frame order: signals and fit sample from the step's flow (the
        depth-free fit's texture, one-frame pair and turn included, and the turns the pipeline
        asked to warp out), memory, imaging statistics, the 1-fps frame. Touches none of
        ``flow_step``'s state (the flow backend it shares only under ``_flow_lock``), so the
        perception worker runs it on its own thread while the next frame's flow is computed."""
        event, image, i = step.event, step.image, step.event.index
        step.derotated_samples = self._answer_requests()
        sample: FitSample | None = None
        flow = step.flow
        if step.fit_frames is not None:
            self._depth_free_fit_flow(step)
            step.fit_frames = None  # the frames are not kept past their sample
        if flow is not None:
            if self._scratch is None or self._scratch.shape != flow.shape:
                self._scratch = np.empty_like(flow)
            s_x, s_rad = flow_signals(flow, self._scratch)
            step.sx.append(s_x)
            step.srad.append(s_rad)
            if step.fit:
                fit_flow = flow if step.fit_flow is None else step.fit_flow
                sample = sample_fit(
                    step.target,
                    fit_flow,
                    step.depth,
                    derotated=step.depth is None and step.fit_derotated,
                    texture=step.fit_texture,
                )
        embedding = self.memory.observe(event, image) if self.memory is not None else None
        statistics = None
        if self.imaging:
            detail = i % detail_stride(self.fps) == 0
            statistics = frame_statistics(step.gray, image, detail=detail)
        quality_frame = None
        if self.keep_quality_frames and is_one_fps_frame(i, self.fps):
            quality_frame = shrink_for_quality(image)
        return PerceptionOutput(
            step.start,
            step.sx,
            step.srad,
            sample,
            step.depth is not None,
            embedding,
            step.from_network,
            statistics,
            quality_frame,
            step.derotated_samples,
        )

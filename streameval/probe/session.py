"""One probe session: connect as ``attach`` would, press each candidate name from rest, and
keep what the server sent.

The source is the profile's own (``transports.urls.open_network_source``), so the probe talks
to the server exactly as an episode will; only the key plan is ours (``LiveSource.driver``):
a rest (no key) to see whether the server moves by itself, then per candidate a keydown,
``press_s`` of holding, a keyup and ``rest_s`` of rest, so every press starts from rest and its
ease-out is seen. Frames are cut into windows by the keydown times and each closed window is
measured off the event loop (``measure.press_signals``), one at a time on one flow backend,
while the next key is held. When the profile's own names already give W S A D L R each a
clear, different motion, the alternatives are skipped (``every=False``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import cv2
import numpy as np
import numpy.typing as npt

from streameval.core.events import ChunkDone, EndOfStream, EpisodeEnd, ErrorEvent, FrameEvent
from streameval.errors import BadInputError
from streameval.perception.flow import FlowBackend, create_flow_backend
from streameval.probe.measure import PressSignals, PressWindow, analysis_frame, press_signals
from streameval.protocol.keys import NO_KEY
from streameval.transports.base import LiveSource
from streameval.transports.urls import AttachOptions, open_network_source

if TYPE_CHECKING:
    from streameval.cases.conditioning import Conditioning

REST_NAME = "(no key)"
"""The window before the first press: what the server does when nothing is held."""
STILL_S = 0.5
"""After a keyup's rest, the next press waits until the picture has been still this long: a
server that answers late and eases out slowly must not lend its tail to the next name."""
STILL_GREY = 0.5
"""Mean absolute difference (grey levels, on an 80×54 thumbnail) under which two consecutive
frames count as still: a re-encoded standing picture stays far under it."""
MAX_EXTRA_REST_S = 6.0
"""The longest wait for stillness beyond the rest asked for (a server that never settles
is then probed as it is; its no-key window says that it moves by itself)."""
THUMB = (80, 54)


@dataclass
class ProbeSession:
    """What one probe saw: the windows' signals (the rest window first), the chunks, the
    first frame, the frame arrival times, and how the session ended."""

    windows: list[PressSignals] = field(default_factory=list)
    chunks: list[ChunkDone] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    first_frame: npt.NDArray[np.uint8] | None = None
    size: tuple[int, int] | None = None
    errors: list[str] = field(default_factory=list)
    end_reason: str | None = None
    complete: bool = False
    messages: dict[str, int] = field(default_factory=dict)
    last_messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    pressed: list[str] = field(default_factory=list)


@dataclass
class _Window:
    name: str
    t_down: float
    t_up: float = float("inf")
    times: list[float] = field(default_factory=list)
    frames: list[npt.NDArray[np.uint8]] = field(default_factory=list)


class WindowPlan:
    """The windows as the driver opens them, and the measuring of closed ones."""

    def __init__(self) -> None:
        self.windows: list[_Window] = []
        self.measured: list[asyncio.Future[PressSignals]] = []
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="probe-flow")
        self._flow: FlowBackend | None = None
        self._closed = 0
        self._thumb: npt.NDArray[np.float32] | None = None
        self.last_motion = time.perf_counter()

    def open(self, name: str, t: float) -> None:
        if self.windows and self.windows[-1].t_up == float("inf"):
            self.windows[-1].t_up = t
        self.windows.append(_Window(name, t))

    def release(self, t: float) -> None:
        self.windows[-1].t_up = t

    def frame(self, t: float, image: npt.NDArray[np.uint8]) -> None:
        grey = analysis_frame(image)
        thumb = np.asarray(cv2.resize(grey, THUMB, interpolation=cv2.INTER_AREA), np.float32)
        if self._thumb is None or float(np.mean(np.abs(thumb - self._thumb))) >= STILL_GREY:
            self.last_motion = t
        self._thumb = thumb
        while self._closed < len(self.windows) - 1 and self.windows[self._closed + 1].t_down <= t:
            self._close_one()
        if self._closed < len(self.windows) and t >= self.windows[self._closed].t_down:
            window = self.windows[self._closed]
            window.times.append(t)
            window.frames.append(grey)

    def close_all(self) -> None:
        while self._closed < len(self.windows):
            self._close_one()

    def _close_one(self) -> None:
        w = self.windows[self._closed]
        self._closed += 1
        window = PressWindow(w.name, w.t_down, w.t_up, w.times, w.frames)
        loop = asyncio.get_running_loop()
        self.measured.append(loop.run_in_executor(self._executor, self._measure, window))
        w.frames = []  # measured there; the analysis frames are not kept twice

    def _measure(self, window: PressWindow) -> PressSignals:
        if self._flow is None:  # made in the worker thread: DIS objects stay on one thread
            self._flow = create_flow_backend("dis-fast")
        return press_signals(window, self._flow)

    async def measured_so_far(self) -> list[PressSignals]:
        """Every window so far, measured (a frame of theirs still queued when they close is
        dropped: a few ms of the last rest)."""
        self.close_all()
        return list(await asyncio.gather(*self.measured))

    async def settle(self, since: float, rest_s: float) -> None:
        """Rest ``rest_s`` from ``since``, then until the picture has been still for
        ``STILL_S`` (at most ``MAX_EXTRA_REST_S`` more)."""
        await asyncio.sleep(max(0.0, since + rest_s - time.perf_counter()))
        give_up = since + rest_s + MAX_EXTRA_REST_S
        while time.perf_counter() - self.last_motion < STILL_S < give_up - time.perf_counter():
            await asyncio.sleep(0.05)

    async def results(self) -> list[PressSignals]:
        return list(await asyncio.gather(*self.measured))

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


Decide = Callable[[list[PressSignals]], bool]
"""Given the windows measured so far: True when the alternatives need not be pressed."""


async def run_probe(
    url: str,
    profile: str,
    names: tuple[str, ...],
    *,
    first_names: int,
    press_s: float,
    rest_s: float,
    enough: Decide | None = None,
    conditioning: Conditioning | None = None,
    no_frame_timeout_s: float = 10.0,
    keys_url: str | None = None,
    page: str | None = None,
) -> ProbeSession:
    """Press ``names`` (the first ``first_names`` are the profile's) on the server at ``url``;
    ``enough`` is asked after the rest and before each name past the profile's whether to
    stop there (a server that moves alone; the names pressed so far suffice). Raises
    ``BadInputError`` when the server cannot be reached."""
    options = AttachOptions(
        clock="wall",
        seconds_per_key=press_s + rest_s,
        profile=profile,
        no_frame_timeout_s=no_frame_timeout_s,
        keys_url=keys_url,
        page=page,
    )
    source = open_network_source(
        url, ("W",), episode="probe", suite="probe", options=options, conditioning=conditioning
    )
    if source.mode != "stream":
        raise BadInputError(
            url,
            "probe holds keys on a server that plays at its own rate (ws, webrtc, mjpeg); "
            "this transport is driven frame by frame or request by request",
        )
    # what each key does, measured on every frame as it arrives: no native-frame gate
    # (it would hold the first frames back, past the rest the probe measures first)
    source.native_frames = False
    # a server that never answers the handshake is named after the same wait as no frame;
    # a server silent at rest sends nothing between presses: its rests are not stalls
    source.config = replace(
        source.config,
        connect_timeout_s=no_frame_timeout_s,
        no_frame_timeout_s=no_frame_timeout_s + rest_s + MAX_EXTRA_REST_S,
    )
    plan = WindowPlan()
    out = ProbeSession()

    async def drive() -> None:
        try:
            if not source.session_open_early:  # else started in connect, for its announced fps
                await source.start_session()
                await source.wait_ready()
        except ConnectionError as exc:
            source.lost(str(exc))
            return
        try:
            t = time.perf_counter()
            source.log.key_down(NO_KEY, t)  # frames count from here
            plan.open(REST_NAME, t)
            await asyncio.sleep(rest_s)  # as it is: a server that moves alone shows it here
            for i, name in enumerate(names):
                # after the rest, then before each name past the profile's: stop as soon as
                # the names pressed suffice (a `--try` name or an alternative that completes
                # the mapping ends the probe there)
                ask = i == 0 or i >= first_names
                if ask and enough is not None and enough(await plan.measured_so_far()):
                    break
                t = time.perf_counter()
                source.log.key_down(name, t)
                plan.open(name, t)
                out.pressed.append(name)
                await source.send_key("keydown", name)
                await asyncio.sleep(press_s)
                t = time.perf_counter()
                await source.send_key("keyup", name)
                source.log.key_down(NO_KEY, t)
                plan.release(t)
                await plan.settle(t, rest_s)
            source.plan_done()
        except Exception as exc:
            source.lost(f"sending keys failed: {exc}")

    source.driver = drive
    try:
        await source.connect()
        await _collect(source, plan, out)
        plan.close_all()
        out.windows = await plan.results()
    finally:
        plan.shutdown()
        await source.close()
    tally = getattr(source, "tally", None)
    if tally is not None:
        out.messages = dict(tally.counts)
        out.last_messages = dict(tally.last)
    return out


async def _collect(source: LiveSource, plan: WindowPlan, out: ProbeSession) -> None:
    while True:
        try:
            event = await source.recv()
        except EndOfStream:
            return
        if isinstance(event, FrameEvent):
            if out.first_frame is None:
                out.first_frame = event.image
                out.size = (event.image.shape[1], event.image.shape[0])
            t = time.perf_counter() if event.t_wall is None else event.t_wall
            out.times.append(t)
            plan.frame(t, event.image)
        elif isinstance(event, ChunkDone):
            out.chunks.append(event)
        elif isinstance(event, ErrorEvent):
            out.errors.append(event.message)
        elif isinstance(event, EpisodeEnd):
            out.complete = event.complete
            out.end_reason = event.reason

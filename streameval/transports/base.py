"""What every network source shares: the key plan, frame admission and the episode's end.

A transport (MQTT, WebRTC, MJPEG) only connects, sends keys and hands over decoded frames; this
class turns them into the pipeline's events (``Source`` interface):

- **Key plan.** ``step`` mode (our protocol, video clock): frame *i* is requested with the key
  the schedule gives it, a few frames ahead, so a served model is conditioned exactly as
  in-process. ``stream`` mode (a server that plays at its own rate): keydown/keyup switch keys
  after ``seconds_per_key`` of wall time (``--clock wall``) or after N received frames
  (``--clock video``); a heartbeat goes out every second. ``request`` mode (a server that
  generates only when asked, ``ondemand.py``): the subclass drives its own requests.
- **Admission.** A duplicate or out-of-order frame is dropped and reported; a frame whose size
  differs from the first ends the episode (incomplete, with the reason); frames are renumbered
  in arrival order so the episode has no holes, and skipped server indices are counted.
- **Alignment.** A frame that says which key conditioned it keeps that key
  (``alignment: reported``); otherwise it gets the key held when it arrived
  (``alignment: inferred``). Either way the key is in the recording's ``actions.jsonl``, so a
  replay scores the same frames with the same keys.
- **Chunks.** A chunked server's boundaries (its statistics messages, or bursts of arrivals;
  ``chunk_log.py``) become ``ChunkDone`` events before the frame that follows them, so the
  recorder keeps them and the episode reports the server's own figures.
- **End.** Plan done → complete; no frame for ``no_frame_timeout_s`` → ``stalled`` (naming the
  last message refused, if any); the transport lost → incomplete with its reason. What was
  received is always kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Literal

from streameval.constants import DEFAULT_FPS
from streameval.core.events import (
    RESPONSE_HINT_KEY,
    EndOfStream,
    EpisodeEnd,
    EpisodeInfo,
    EpisodeStart,
    Event,
    FrameEvent,
    KeySent,
    SourceError,
)
from streameval.core.tasks import cancel_and_wait
from streameval.errors import BadInputError
from streameval.inputs.arrays import depth_problem
from streameval.protocol.keys import NO_KEY
from streameval.protocol.schedule import Schedule
from streameval.protocol.wire import Frame
from streameval.transports.arrivals import Alignment, ArrivalLog
from streameval.transports.chunk_log import ChunkLog
from streameval.transports.live_config import ServerInfo, SourceRequest, live_extra
from streameval.transports.native_gate import LIVE_KEY, RECORD_KEY, NativeGate
from streameval.transports.rate_meter import RateMeter
from streameval.transports.refusals import busy_words

if TYPE_CHECKING:
    from streameval.cases.conditioning import Conditioning

STEP_WINDOW = 4
"""Frames requested ahead of the last one received (hides one round trip at 16 fps)."""
HEARTBEAT_S = 1.0
RESEND_AFTER_S = 1.0
"""Video clock: steps asked again when no frame came for this long."""
PLAN_GRACE_S = 30.0
"""Wall clock: the key plan ends this long after its last key at the latest (each send has a
10 s timeout of its own; this bounds the episode whatever the transport does)."""
MAX_REPORTED_PER_KIND = 5
"""Admission problems reported one by one before only the counter goes on."""


class LiveSource:
    """Base of the network sources; subclasses implement the four transport hooks."""

    droppable = True  # a live server cannot be paused: perception drops (counted) if behind
    mode: Literal["step", "stream", "request"] = "stream"
    scheme = "live"
    chunks_from_server = False  # True: the server's statistics messages mark chunks
    native_frames = True  # stream mode: only native frames enter (False: every frame, at once)

    def __init__(self, request: SourceRequest, *, shown: str | None = None) -> None:
        self.url = request.url if shown is None else shown  # as errors and results name it
        self.keys = request.keys
        self.episode = request.episode
        self.suite = request.suite
        self.config = request.config
        self.fps_hint = request.fps
        self.model_name = request.model
        self.info: EpisodeInfo | None = None
        self.log = ArrivalLog()
        self._events: asyncio.Queue[Event] = asyncio.Queue()
        self._pending_frames = 0
        self._frame_arrived = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False
        self._ended = False
        self._last_index: int | None = None
        self._size: tuple[int, int] | None = None
        self._held: str | None = None
        self._reported: dict[str, int] = {}
        self._resend = False
        self.max_pending_seen = 0
        self.chunks = ChunkLog(DEFAULT_FPS, from_server=False)
        self.last_refused: str | None = None
        self._server_seen = -1  # the last server frame index seen, before admission
        self._deadline: float | None = None  # wall clock: when the key plan must be done
        self.session_open_early = False  # started (ready awaited) in ``connect``, for its fps
        # frames the server sent before its ready: kept, under no key (docs/serve-formats.md
        # #frame-rate); before the episode exists they wait here
        self._before_ready: list[tuple[Frame, float, bool]] = []
        self._early_indices: set[int] = set()
        self.ready_seen = False  # the transport saw the server's ready
        self.fps_origin = "transport"  # where the transport's fps came from (scores.json)
        self.response_hint_s: float | None = None  # the profile's response_s (urls.py)
        self._rate: RateMeter | None = None  # no rate said: frames before the session, timed
        self._early_end: str | None = None  # lost before the episode started: ends it at once
        self.ended_complete = False  # the key plan ran to its end (not lost, not stopped)
        self.conditioning: Conditioning | None = None
        """The benchmark case this session starts from (sources whose profile sends it)."""
        self.gate = NativeGate(DEFAULT_FPS, classify=False)  # set up by ``connect``
        self._rate_known = asyncio.Event()
        times = ("connect", "configure", "ready", "first_key")
        self.session_times: dict[str, float | None] = dict.fromkeys(times)
        self.driver: Callable[[], Coroutine[Any, Any, None]] | None = None
        """Drives the keys instead of the mode's own plan (``streameval probe`` presses key
        names of its own choosing through ``send_key``); it ends with ``plan_done``."""

    # ------------------------------------------------------------ transport hooks

    async def open_transport(self) -> ServerInfo:
        """Connect; raise ``BadInputError`` naming the URL when the server cannot be used."""
        raise NotImplementedError

    async def send_step(self, index: int, key: str) -> None:
        raise NotImplementedError

    async def send_key(
        self, kind: Literal["keydown", "keyup", "heartbeat"], key: str | None
    ) -> None:
        raise NotImplementedError

    async def close_transport(self) -> None:
        raise NotImplementedError

    async def drive_requests(self) -> None:
        """``request`` mode: ask for every chunk of the key plan, then end the episode."""
        raise NotImplementedError

    async def start_session(self) -> None:
        """Stream mode, before the first key: send what starts the session (a profile's
        ``configure``, with a benchmark case's image and caption when ``conditioning`` is
        set); raise ``ConnectionError`` (``CaseRefused``) with the server's words when it
        would not take it. Here, not in ``open_transport``: a refused case is that episode
        incomplete, the run goes on; an unreachable server is bad input before any."""

    async def wait_ready(self) -> None:
        """Stream mode: wait for the server's answer to the session setup before the first
        key; raise ``ConnectionError`` with the reason when it does not come."""

    def announces_fps(self) -> bool:
        """Whether the server's answer to the session setup names its frame rate (a profile's
        ``[ready] fps``): then ``connect`` starts the session and runs the episode at it."""
        return False

    def announced_fps(self) -> float | None:
        """The frame rate the server announced (after ``wait_ready``), or None."""
        return None

    @property
    def sends_conditioning(self) -> bool:
        """Whether this session sends its case's start (a profile whose start template
        takes it); False without a case."""
        return False

    def on_chunk_closed(self) -> None:
        """A chunk boundary passed (press/pose profiles press again here)."""

    def on_frame_admitted(self) -> None:
        """A frame entered the episode."""

    def stall_reason(self) -> str | None:
        """Why no frame came, when the transport knows better than "no frame" (frames that
        arrive while the session still waits for a message the server never sends)."""
        return None

    def plan_done(self) -> None:
        """A custom ``driver`` finished its plan: the episode ends complete."""
        self._finish(complete=True, reason=None)

    # ------------------------------------------------------------ called by transports

    def deliver(self, frame: Frame, t_arrival: float | None = None) -> None:
        """A decoded frame arrived (call from the transport's reader, on the event loop)."""
        now = time.perf_counter() if t_arrival is None else t_arrival
        if self.info is None and self._rate is not None:
            self._rate.add(now)  # measuring the rate: before the episode, not in it
            return
        if self.info is None and self.session_open_early and not self._ended:
            # the session was started for its fps: these frames wait for the episode
            self._before_ready.append((frame, now, not self.ready_seen))
            return
        if self._ended or self.info is None:
            return
        self._server_seen = max(self._server_seen, frame.index)
        early = frame.index in self._early_indices
        if self.mode == "stream" and not self.log.keys_sent and not early:
            self.log.count("preroll")  # played before our first key: not part of the episode
            return
        if self._last_index is not None and frame.index <= self._last_index:
            what = "duplicate" if frame.index == self._last_index else "out of order"
            self.log.count(what.replace(" ", "_"))
            said = f"{self.url}: frame {frame.index} {what} (after {self._last_index}), dropped"
            self._report(what, said)
            return
        if self._last_index is not None and frame.index > self._last_index + 1:
            self.log.count("missing", frame.index - self._last_index - 1)
        self._last_index = frame.index
        size = (frame.image.shape[1], frame.image.shape[0])
        if self._size is None:
            self._size = size
        elif size != self._size:
            was, got = f"{self._size[0]}x{self._size[1]}", f"{size[0]}x{size[1]}"
            self.lost(f"frame size changed from {was} to {got} at server frame {frame.index}")
            return
        if frame.depth is not None:
            why = depth_problem(frame.depth, (frame.image.shape[0], frame.image.shape[1]))
            if why is not None:  # as the in-process driver: not scored as if it were fine
                self.reject(f"frame {frame.index} depth {why}")
                return
        if self._pending_frames >= self.config.max_pending_frames:
            self.log.count("dropped_transport")
            return
        self._admit_all(self.gate.push(frame, now))

    def _admit_all(self, frames: list[tuple[Frame, float]]) -> None:
        """Native frames the gate let through (``native_gate.py``): into the episode."""
        if self.gate.decided and not self._rate_known.is_set():
            self._rate_decided()
        for frame, t in frames:
            self._admit(frame, t)

    def _rate_decided(self) -> None:
        """The native rate is known: the episode's clock and key plan run on it."""
        assert self.info is not None
        fps = self.gate.native_fps
        if fps != self.info.fps:
            schedule = Schedule.per_key(self.keys, self.config.seconds_per_key, fps)
            self.info = dataclasses.replace(self.info, fps=fps, schedule=schedule)
            self.chunks.fps = fps
        self._rate_known.set()

    def _admit(self, frame: Frame, now: float) -> None:
        i = self.log.n_frames
        if frame.index in self._early_indices:
            key = NO_KEY  # before the server's ready: no key was held
            self.log.count("before_ready")
        elif frame.key is not None:
            key, self.log.alignment = frame.key, "reported"
        else:
            key = self.log.key_at(now)
        self.log.frame(now, frame.t_server)
        closed = self.chunks.frame(i, frame.index, now)
        for chunk in closed:
            self._events.put_nowait(chunk)
        if closed:
            self.on_chunk_closed()
        self.on_frame_admitted()
        self._pending_frames += 1
        self.max_pending_seen = max(self.max_pending_seen, self._pending_frames)
        assert self.info is not None
        self._events.put_nowait(
            FrameEvent(
                index=i,
                image=frame.image,
                key=key,
                t_video=i / self.info.fps,
                t_wall=now,
                pose=frame.pose,
                depth=frame.depth,
                intrinsics=frame.intrinsics,
            )
        )
        self._frame_arrived.set()

    def server_chunk(self, frames: int | None, stats: dict[str, float]) -> None:
        """The server's statistics message for one chunk (``frames`` long when it says)."""
        if self._ended or self.info is None or not self.log.keys_sent:
            return  # before our first key: not part of the episode
        now = time.perf_counter()
        held = self.gate.first_held()  # received, not yet in the episode: still to come
        first = held if held is not None else self._server_seen + 1
        closed = self.chunks.announce(frames, stats, now, first=first, held=held is not None)
        for chunk in closed:
            self._events.put_nowait(chunk)
        if closed:
            self.on_chunk_closed()

    def reject(self, problem: str) -> None:
        """A message that could not be accepted (malformed, oversized, undecodable)."""
        self.last_refused = problem
        self.log.count("malformed")
        self._report("malformed", f"{self.url}: {problem}")

    def _session_record(self) -> None:
        """The gate's last frames, and what it kept, into the episode (``RECORD_KEY``)."""
        if self.info is None:
            return
        self._admit_all(self.gate.flush())
        self.info.extra[RECORD_KEY] = self.gate.record(self.session_times)

    def refused_busy(self) -> str | None:
        """The server's words if it refused the session as held by another (``busy_words``)."""
        return None if self.log.keys_sent else busy_words(self._early_end)

    def lost(self, reason: str) -> None:
        """The session cannot go on: end the episode now, incomplete, keeping what came
        (before it started: as soon as it starts, so its end follows its start)."""
        if self.info is None and not self._ended:
            self._early_end = self._early_end or reason
            return
        self._finish(complete=False, reason=reason)

    # ------------------------------------------------------------ Source interface

    async def connect(self) -> None:
        """Open the transport and start driving keys (``run_job`` awaits this first, so an
        unreachable server is bad input with the URL, never a half-started episode)."""
        self.session_times["connect"] = time.perf_counter()
        try:
            server = await asyncio.wait_for(self.open_transport(), self.config.connect_timeout_s)
        except TimeoutError:
            with contextlib.suppress(Exception):
                await self.close_transport()
            raise BadInputError(
                self.url, f"no answer within {self.config.connect_timeout_s:g} s"
            ) from None
        fps, fps_source = self.fps_hint or server.fps, "asked" if self.fps_hint else self.fps_origin
        announced = None
        if self.mode == "stream" and self.fps_hint is None and self.announces_fps():
            await self._open_session()
            announced = self.announced_fps()
            if announced is not None:
                fps, fps_source = announced, "server"
        if self.mode == "stream" and fps_source == "default" and announced is None:
            self._rate = RateMeter()  # nothing says the rate: measured before the first key
            measured = await self._rate.measure(lambda: self._ended or bool(self._early_end))
            self._rate = None
            if measured is not None:
                fps, fps_source = measured, "measured"
        schedule = Schedule.per_key(self.keys, self.config.seconds_per_key, fps)
        alignments: dict[str, Alignment] = {"step": "scheduled", "request": "reported"}
        self.log.alignment = alignments.get(self.mode, "inferred")
        clock = "video" if self.mode != "stream" else self.config.clock
        spk = self.config.seconds_per_key
        self.info = EpisodeInfo(
            episode=self.episode,
            model=self.model_name or server.model,
            suite=self.suite,
            fps=fps,
            schedule=schedule,
            source=self.url,
            width=server.width,
            height=server.height,
            extra=live_extra(self.scheme, clock, spk, fps_source, announced),
        )
        if self.response_hint_s is not None:
            self.info.extra[RESPONSE_HINT_KEY] = self.response_hint_s
        if self.conditioning is not None:
            from streameval.cases.episode import case_extra

            self.info.extra.update(case_extra(self.conditioning, sent=self.sends_conditioning))
        self.chunks = ChunkLog(fps, from_server=self.chunks_from_server)
        self.gate = NativeGate(fps, classify=self.mode == "stream" and self.native_frames)
        self.info.extra[LIVE_KEY] = self.gate.live_counts
        if self.mode != "stream":
            self.session_times["ready"] = time.perf_counter()
        self._events.put_nowait(EpisodeStart(self.info))
        self._started = True
        early, self._before_ready = self._before_ready, []
        if self._early_end is not None:  # no ready ever came: counted, not an episode
            self.log.count("before_ready", sum(before for _, _, before in early))
            early = []
        self._early_indices = {frame.index for frame, _, before in early if before}
        for frame, t_arrival, _ in early:
            self.deliver(frame, t_arrival)
        if self._early_end is not None:
            self._finish(complete=False, reason=self._early_end)
            return
        drivers = {"step": self._drive_steps, "stream": self._drive_stream}
        driver = self.driver or drivers.get(self.mode, self.drive_requests)
        self._tasks.append(asyncio.create_task(driver()))

    async def _open_session(self) -> None:
        """Start the session and wait for its ready before the episode exists, so that it
        runs at the fps the server announces; a refusal ends the episode as soon as it
        starts, with the server's words (as in ``_drive_stream``)."""
        self.session_open_early = True
        try:
            self.session_times["configure"] = time.perf_counter()
            await self.start_session()
            # as ``recv`` would: no event for the no-frame timeout is a stall, named
            async with asyncio.timeout(self.config.no_frame_timeout_s):
                await self.wait_ready()
            self.session_times["ready"] = time.perf_counter()
        except TimeoutError:
            refused = f" (last message refused: {self.last_refused})" if self.last_refused else ""
            self.lost(
                self.stall_reason()
                or f"stalled: no frame for {self.config.no_frame_timeout_s:g} s{refused}"
            )
        except ConnectionError as exc:
            self.lost(str(exc))
        except Exception as exc:
            self.lost(f"sending keys failed: {exc}")

    async def recv(self) -> Event:
        if not self._started:
            await self.connect()
        while True:
            if self._ended and self._events.empty():
                raise EndOfStream
            try:
                # queued already: no wait at all; else asyncio.timeout, not wait_for, which
                # wraps the get in a task: two more event-loop turns per event, each one
                # behind whatever else the loop has to do (frames are read on this loop)
                if not self._events.empty():
                    event = self._events.get_nowait()
                else:
                    async with asyncio.timeout(self.config.no_frame_timeout_s):
                        event = await self._events.get()
            except TimeoutError:
                if self._ended:
                    raise EndOfStream from None
                refused = (
                    f" (last message refused: {self.last_refused})" if self.last_refused else ""
                )
                reason = self.stall_reason() or (
                    f"stalled: no frame for {self.config.no_frame_timeout_s:g} s{refused}"
                )
                self._finish(complete=False, reason=reason)
                continue
            if isinstance(event, EpisodeStart):
                # the episode's clock is the model's native rate: known after its first frames
                await self._wait_for_rate()
                assert self.info is not None
                event = EpisodeStart(self.info)
            if isinstance(event, FrameEvent):
                self._pending_frames -= 1
                if self._deadline is not None and time.perf_counter() > self._deadline:
                    # frames still come but the key plan is overdue: a send that never
                    # returned must not keep the episode open for ever
                    self._finish(complete=False, reason="the key plan did not finish in time")
            return event

    async def _wait_for_rate(self) -> None:
        """Until the gate knows the native rate; past the no-frame timeout it is fixed with
        what came (the announced rate without frames)."""
        if self._rate_known.is_set():
            return
        try:
            async with asyncio.timeout(self.config.no_frame_timeout_s):
                await self._rate_known.wait()
        except TimeoutError:
            self._admit_all(self.gate.decide_now())

    async def close(self) -> None:
        self._ended = True
        await cancel_and_wait(self._tasks)
        with contextlib.suppress(Exception):
            await self.close_transport()

    # ------------------------------------------------------------ internals

    def _report(self, kind: str, message: str) -> None:
        n = self._reported.get(kind, 0)
        self._reported[kind] = n + 1
        if n < MAX_REPORTED_PER_KIND:
            self._events.put_nowait(SourceError(message))
        elif n == MAX_REPORTED_PER_KIND:
            self._events.put_nowait(SourceError(f"{self.url}: more {kind} messages, counted only"))

    def _finish(self, *, complete: bool, reason: str | None) -> None:
        if self._ended:
            return
        self._session_record()
        self._ended = True
        self.ended_complete = complete
        if self.info is not None:
            self.info.extra["interactivity"].update(self.log.counters())
        for chunk in self.chunks.finish(time.perf_counter()):
            self._events.put_nowait(chunk)
        if not complete and reason:
            self._events.put_nowait(SourceError(f"{self.url}: {reason}", fatal=True))
        self._events.put_nowait(EpisodeEnd(self.log.n_frames, complete, reason))
        self._frame_arrived.set()

    def press(self, key: str, frame: int) -> None:
        """``key`` goes out for ``frame``: the first key's time, the arrival log, ``KeySent``."""
        now = time.perf_counter()
        self.session_times["first_key"] = self.session_times["first_key"] or now
        self.log.key_down(key, now)
        self._events.put_nowait(KeySent(key=key, frame=frame, t_wall=now))

    def resend_steps(self) -> None:
        """After a reconnect: steps in flight may be lost; ask again (the server renders
        only indices it has not rendered yet, so a lost frame is a counted gap)."""
        self._resend = True
        self._frame_arrived.set()

    async def _drive_steps(self) -> None:
        """Video clock over our protocol: request frame i with the schedule's key."""
        assert self.info is not None
        schedule = self.info.schedule
        total = schedule.total_frames
        requested = 0
        try:
            while not self._ended:
                done = -1 if self._last_index is None else self._last_index
                if self._resend:
                    self._resend = False
                    for i in range(done + 1, requested):
                        await self.send_step(i, schedule.key_for_frame(i))
                while requested < min(total, done + 1 + STEP_WINDOW):
                    key = schedule.key_for_frame(requested)
                    self.press(key, requested)
                    await self.send_step(requested, key)
                    requested += 1
                if done + 1 >= total:
                    self._finish(complete=True, reason=None)
                    return
                self._frame_arrived.clear()
                try:  # asyncio.timeout: a cancel is never lost (3.11's wait_for can drop one)
                    async with asyncio.timeout(RESEND_AFTER_S):
                        await self._frame_arrived.wait()
                except TimeoutError:
                    # requests (or their frames) lost on the way, e.g. across a broker
                    # restart: ask again; the server ignores indices it already rendered
                    self._resend = True
        except Exception as exc:
            self.lost(f"sending keys failed: {exc}")

    async def _drive_stream(self) -> None:
        """A server playing at its own rate: keydown/keyup by wall time or frame count."""
        assert self.info is not None
        heartbeat = asyncio.create_task(self._heartbeat())
        try:
            if not self.session_open_early:
                try:
                    self.session_times["configure"] = time.perf_counter()
                    await self.start_session()
                    await self.wait_ready()
                    self.session_times["ready"] = time.perf_counter()
                except ConnectionError as exc:
                    self.lost(str(exc))
                    return
            t0 = time.perf_counter()
            if self.config.clock == "wall":
                plan_s = len(self.keys) * self.config.seconds_per_key
                self._deadline = t0 + plan_s + PLAN_GRACE_S
            for j, key in enumerate(self.keys):
                if self._ended:
                    return
                if self._held is not None:
                    await self.send_key("keyup", self._held)
                self.press(key, self.log.n_frames)
                await self.send_key("keydown", key)
                self._held = key
                if self.config.clock == "wall":
                    until = t0 + (j + 1) * self.config.seconds_per_key
                    await asyncio.sleep(max(0.0, until - time.perf_counter()))
                else:  # the native schedule, once the gate knows the native rate
                    boundary = self.info.schedule.boundaries[j + 1]
                    while not self._ended and self.log.n_frames < boundary:
                        self._frame_arrived.clear()
                        await self._frame_arrived.wait()
            if self._held is not None:
                await self.send_key("keyup", self._held)
            self._finish(complete=True, reason=None)
        except Exception as exc:
            self.lost(f"sending keys failed: {exc}")
        finally:
            heartbeat.cancel()

    async def _heartbeat(self) -> None:
        while not self._ended:
            await asyncio.sleep(HEARTBEAT_S)
            with contextlib.suppress(Exception):
                await self.send_key("heartbeat", None)

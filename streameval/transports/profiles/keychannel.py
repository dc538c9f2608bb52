"""Keys as a server profile says to send them: templates, hold/press/pose/frame, heartbeat.

Every transport (WebSocket, WebRTC data channel, MJPEG with ``--keys-url``) hands its outgoing
path to a ``KeyChannel`` as a ``KeyOut``; the channel renders the profile's templates
(``profiles/templates.py``) and implements the hold semantics
(docs/serve-formats.md#writing-a-profile):

- ``hold``: keydown when a key starts, keyup when it ends (WorldFoundry, world-arcade, public);
- ``press``: no keyup; the key is pressed once now and again at every chunk boundary (the
  server's chunk message, a burst, or ``chunk_frames`` frames arrived), or every
  ``press_every_ms`` — one press per generated block, never a backlog of presses the server
  would play long after the key changed (Matrix-Game 2, Hunyuan-GameCraft);
- ``pose``: like ``press``, but each message carries the key's camera path for the next
  chunk: ``chunk_frames`` camera-to-world poses (OpenCV axes) advanced at the profile's speed,
  and the intrinsics;
- ``frame``: one ``control`` message per frame, from the first key to the end: the held
  key's buttons and its mouse motion for one frame (``[keys.mouse]``). The next goes when the
  last one's frame arrived and a frame interval has passed: a server that makes one frame per
  control message (Overworld's world engine) is driven at the profile's fps at most, one
  message in flight, and one that streams takes the newest; a frame that never comes is
  asked for again after ``FRAME_RESEND_S`` (or four frame intervals), never a stall.

A start template (``configure``, ``reset``) may be a list of messages, sent in order; one
that needs a case value the run does not have is left out whole (Overworld's ``seed_image``
without a case image: the server keeps its own seed).

The heartbeat runs at the profile's interval on its own task. The time of the last message
sent is kept: a server that drops a silent client is then named as such.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from streameval.cases.conditioning import PLACEHOLDERS as _CASE_PLACEHOLDERS
from streameval.core.tasks import cancel_and_wait
from streameval.errors import TemplateError
from streameval.transports.profiles import ServerProfile
from streameval.transports.profiles.model import START_TEMPLATES
from streameval.transports.profiles.templates import encode, placeholders_in, render

if TYPE_CHECKING:
    pass

KeyKind = Literal["keydown", "keyup", "heartbeat"]
KEY_TEMPLATES = ("keydown", "keyup", "press", "control", "heartbeat")
CASE_PLACEHOLDERS = frozenset(_CASE_PLACEHOLDERS)
_PRESS_FALLBACK_CHUNKS = 4.0
"""Press again after this many chunk durations with no boundary seen (a lost press)."""
FRAME_RESEND_S = 1.0
"""``frame`` semantics: a control message whose frame has not come in this long (or four
frame intervals, whichever is longer) is followed by the next one anyway."""
SEND_TIMEOUT_S = 10.0
"""A key message the server has not taken in this long ends the episode (named), never a hang."""


class KeyOut(Protocol):
    """Where the channel's messages go."""

    async def send(self, payload: str | bytes) -> None: ...


class WsOut:
    def __init__(self, ws: Any) -> None:
        self.ws = ws

    async def send(self, payload: str | bytes) -> None:
        if self.ws.closed:
            raise ConnectionError("WebSocket closed")
        if isinstance(payload, bytes):
            await self.ws.send_bytes(payload)
        else:
            await self.ws.send_str(payload)


class HttpPostOut:
    def __init__(self, session: Any, url: str) -> None:
        self.session, self.url = session, url

    async def send(self, payload: str | bytes) -> None:
        import aiohttp

        kind = "application/msgpack" if isinstance(payload, bytes) else "application/json"
        async with self.session.post(
            self.url,
            data=payload,
            headers={"Content-Type": kind},
            timeout=aiohttp.ClientTimeout(total=SEND_TIMEOUT_S),
        ) as response:
            if response.status >= 400:  # the server's own words, one line
                words = " ".join((await response.text(errors="replace")).split())[:300]
                raise ConnectionError(f"{self.url}: HTTP {response.status} {words}".rstrip())


class ChannelOut:
    """A WebRTC data channel (its ``send`` is synchronous)."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel

    async def send(self, payload: str | bytes) -> None:
        if self.channel.readyState != "open":
            raise ConnectionError("data channel closed")
        self.channel.send(payload)


def _yaw(angle: float) -> np.ndarray:
    """Rotation about the camera's y axis (down, OpenCV): positive turns right."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


class PosePath:
    """The camera path our keys stand for: per frame, W/S move along z, A/D along x, L/R turn
    about y, at the profile's speed (``pose``)."""

    def __init__(self, profile: ServerProfile, fps: float) -> None:
        spec = profile.pose
        self.step_m = spec.speed_m_s / fps
        self.step_rad = math.radians(spec.turn_deg_s) / fps
        self.pose = np.eye(4)
        f = (spec.width / 2) / math.tan(math.radians(spec.fov_deg) / 2)
        self.intrinsics = [[f, 0.0, spec.width / 2], [0.0, f, spec.height / 2], [0.0, 0.0, 1.0]]

    def advance(self, key: str, frames: int) -> list[list[list[float]]]:
        move = {"W": (0, 0, 1), "S": (0, 0, -1), "A": (-1, 0, 0), "D": (1, 0, 0)}.get(key)
        turn = {"L": -1.0, "R": 1.0}.get(key, 0.0)
        out = []
        for _ in range(frames):
            delta = np.eye(4)
            if move is not None:
                delta[:3, 3] = np.array(move, dtype=np.float64) * self.step_m
            if turn:
                delta[:3, :3] = _yaw(turn * self.step_rad)
            self.pose = self.pose @ delta
            out.append([[round(float(v), 9) for v in row] for row in self.pose])
        return out


class KeyChannel:
    """Renders and sends a profile's messages; ``on_lost`` ends the episode with a reason."""

    def __init__(
        self,
        profile: ServerProfile,
        names: dict[str, str],
        out: KeyOut,
        *,
        fps: float,
        episode: str,
        on_lost: Callable[[str], None],
    ) -> None:
        self.profile = profile
        self.names = names
        self.out = out
        self.fps = fps
        self.episode = episode
        self.on_lost = on_lost
        self.last_sent: float | None = None
        self.sent = 0
        self._boundary = asyncio.Event()
        self._frames = 0
        self._repeater: asyncio.Task[None] | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._chunk = 0
        self._path = PosePath(profile, fps) if profile.keys.semantics == "pose" else None
        self._held: str | None = None  # ``frame``: the key each control message carries
        self._arrived = asyncio.Event()  # ``frame``: a frame came since the last control
        self._controls: asyncio.Task[None] | None = None
        self.controls_sent = 0
        self.case_values: dict[str, Any] | None = None
        """A benchmark case's placeholder values (``profiles/conditioning.py``); None: no case,
        and a template's fields that are a case placeholder are left out."""

    # ------------------------------------------------------------ rendering

    def values(self, key: str | None) -> dict[str, Any]:
        name = self.names.get(key, key) if key else None
        dx, dy = self.profile.keys.motion(key)
        return {
            **(self.case_values or {}),
            "key": name,
            "mouse_dx": dx,
            "mouse_dy": dy,
            "buttons": [name] if self.profile.keys.is_button(key) and name else [],
            "keycode": self.profile.keycode(key, name) if key and name else None,
            "timestamp": round(time.time(), 3),
            "speed": self.profile.keys.speed,
            "chunk": self._chunk,
            "frames": self.profile.keys.chunk_frames,
            "episode": self.episode,
        }

    def message(self, template: str, key: str | None, **extra: Any) -> str | bytes:
        """One rendered, encoded message; ``TemplateError`` names the template."""
        return self._rendered(self.profile.templates[template], template, key, **extra)

    def messages(self, template: str, key: str | None) -> list[str | bytes]:
        """A start template's messages: one, or a list sent in order, of which a message
        that needs a case value the run lacks (``{image_base64}`` without a case image) is
        left out whole."""
        body = self.profile.templates[template]
        if not isinstance(body, list) or template not in START_TEMPLATES:
            return [self.message(template, key)]
        values = {**self.values(key), **(self.case_values or {})}
        out = []
        for part in body:
            missing = (placeholders_in(part) & CASE_PLACEHOLDERS) - {
                k for k, v in values.items() if v is not None
            }
            if not missing:
                out.append(self._rendered(part, template, key))
        return out

    def _rendered(
        self, template_body: Any, template: str, key: str | None, **extra: Any
    ) -> str | bytes:
        try:
            optional = CASE_PLACEHOLDERS if self.case_values is None else frozenset()
            body = render(template_body, {**self.values(key), **extra}, optional=optional)
            return encode(body, self.profile.keys.encoding)
        except TemplateError as exc:
            hint = ""
            if self.case_values is None and any(f"{{{p}}}" in str(exc) for p in CASE_PLACEHOLDERS):
                hint = " (a case's placeholder: run with --cases)"
            raise TemplateError(
                f"profile {self.profile.name!r}: template {template}: {exc}{hint}"
            ) from None

    def check(self, keys: tuple[str, ...]) -> None:
        """Render every template for every key of the episode before it starts: a key whose
        name has no keyCode is bad input now, not a lost episode later."""
        for start in (t for t in ("configure", "reset") if t in self.profile.templates):
            self.messages(start, None)  # once: a case's image may be megabytes of base64
        for template in (t for t in KEY_TEMPLATES if t in self.profile.templates):
            targets: set[str | None] = set(keys) or {None}
            for key in targets:
                self.message(template, key)

    async def _send(self, payload: str | bytes) -> None:
        try:
            async with asyncio.timeout(SEND_TIMEOUT_S):
                await self.out.send(payload)
        except TimeoutError:
            where = getattr(self.out, "url", "the key channel")
            raise ConnectionError(f"{where}: no answer within {SEND_TIMEOUT_S:g} s") from None
        self.last_sent = time.perf_counter()
        self.sent += 1

    # ------------------------------------------------------------ what the source calls

    async def start(self, template: str = "configure") -> None:
        """Send ``template`` (``configure``, or ``reset`` on a kept connection; if the profile
        has it; with a case's values when ``case_values`` is set) and start the heartbeat."""
        if template in self.profile.templates:
            for payload in self.messages(template, None):
                await self._send(payload)
        if self.profile.keys.heartbeat_s:
            self._heartbeat = asyncio.create_task(self._beat(self.profile.keys.heartbeat_s))

    async def key(self, kind: KeyKind, key: str | None) -> None:
        if kind == "heartbeat":
            return  # our own task keeps the profile's interval
        if self.profile.keys.semantics == "hold":
            if kind in self.profile.templates:
                await self._send(self.message(kind, key))
            return
        if self.profile.keys.semantics == "frame":
            # the next control message carries it; the first key starts the messages
            self._held = key if kind == "keydown" else None
            if self._controls is None and kind == "keydown":
                self.message("control", key)  # a template that does not render: now
                self._controls = asyncio.create_task(self._control_loop())
            return
        await self._stop_repeater()
        if kind == "keydown" and key is not None:
            await self._press(key)  # the first press goes out before keydown returns
            self._repeater = asyncio.create_task(self._repeat(key))

    def chunk_closed(self) -> None:
        self._boundary.set()

    def arrived(self) -> None:
        """A frame came from the server (any frame, before admission): ``frame`` semantics
        sends the next control message."""
        self._arrived.set()

    def frame(self) -> None:
        """A frame entered the episode (every transport calls this; one that sees frames
        before admission calls ``arrived`` sooner)."""
        self._arrived.set()
        self._frames += 1
        if self._frames >= self.profile.keys.chunk_frames:
            self._boundary.set()

    async def close(self) -> None:
        await self._stop_repeater()
        await cancel_and_wait([self._heartbeat, self._controls])

    def silence(self) -> float | None:
        """Seconds since we last sent anything (None: nothing sent)."""
        return None if self.last_sent is None else time.perf_counter() - self.last_sent

    # ------------------------------------------------------------ press / pose

    async def _press(self, key: str) -> None:
        self._boundary.clear()
        self._frames = 0
        if self._path is not None:
            poses = self._path.advance(key, max(1, self.profile.keys.chunk_frames))
            payload = self.message("pose", key, poses=poses, intrinsics=self._path.intrinsics)
        else:
            payload = self.message("press", key)
        await self._send(payload)
        self._chunk += 1

    async def _repeat(self, key: str) -> None:
        every = self.profile.keys.press_every_ms
        chunk_s = max(1, self.profile.keys.chunk_frames) / self.fps
        try:
            while True:
                if every:
                    await asyncio.sleep(every / 1000.0)
                else:
                    # asyncio.timeout, not wait_for: Python 3.11's wait_for returns the inner
                    # result when it is cancelled in the turn the boundary is set, so a keyup's
                    # cancel was lost and the keyup waited for this task forever
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(_PRESS_FALLBACK_CHUNKS * chunk_s):
                            await self._boundary.wait()
                if self._repeater is not asyncio.current_task():
                    return  # superseded by a key change (belt and braces for the above)
                await self._press(key)
        except asyncio.CancelledError:
            raise
        except TemplateError as exc:
            self.on_lost(f"{exc} (the profile's template does not render)")
        except Exception as exc:
            self.on_lost(f"sending keys failed: {exc}")

    async def _stop_repeater(self) -> None:
        repeater, self._repeater = self._repeater, None
        # bounded: a press in flight ends with its send's own timeout at the latest
        await cancel_and_wait([repeater], SEND_TIMEOUT_S)

    async def _control_loop(self) -> None:
        """``frame`` semantics: one control message per frame, paced (module docstring)."""
        period = 1.0 / self.fps
        patience = max(FRAME_RESEND_S, 4 * period)
        try:
            while True:
                self._arrived.clear()
                await self._send(self.message("control", self._held))
                sent_at = time.perf_counter()  # out: the next one a frame interval after it
                self.controls_sent += 1
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(patience):
                        await self._arrived.wait()
                await asyncio.sleep(max(0.0, sent_at + period - time.perf_counter()))
        except asyncio.CancelledError:
            raise
        except TemplateError as exc:
            self.on_lost(f"{exc} (the profile's template does not render)")
        except Exception as exc:
            self.on_lost(f"sending keys failed: {exc}")

    async def _beat(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            with contextlib.suppress(Exception):
                await self._send(self.message("heartbeat", None))

"""``attach ws://HOST:PORT/PATH --profile NAME``: a WebSocket model server (aiohttp client).

The profile (``profiles/``) says everything about the server: frames as binary JPEG/PNG
messages or base64 in a JSON field; its other messages JSON text or msgpack; which message
answers ``configure``, which closes a chunk with statistics, which reports an error; and how
keys go (templates, hold/press/pose, heartbeat; ``keychannel.py``), on this socket or on
``--keys-url`` (http(s):// POST or another ws(s)://). docs/serve-formats.md#websocket.

Faults keep the episode (``LiveSource``): a socket closed mid-episode ends it incomplete with
the close code and reason (and, when we had been silent for a while and the profile sends no
heartbeat, says that the server may want one); a message over the size limit is refused by
aiohttp, which closes the socket (1009), named as such; no answer to ``configure`` within the
profile's timeout, or no frame, ends it incomplete; an undecodable, truncated or wrong-kind
message is counted and reported, the episode goes on. An ``[error]`` message before the
session started (before the answer to ``configure``) is the server refusing it: the episode
ends incomplete with the server's own words (a benchmark case it will not run; the run goes
on with the next).

With a benchmark case (``conditioning``), ``configure`` carries its image, caption and
intrinsics as the profile's ``[conditioning]`` says (``profiles/conditioning.py``); it is sent
when the key plan starts (``start_session``), after the episode started, so that a refused
case is an incomplete episode and not bad input.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from streameval.constants import DEFAULT_FPS
from streameval.errors import BadInputError, MessageProblem, TemplateError, redact_url
from streameval.protocol.wire import Frame
from streameval.transports.base import LiveSource
from streameval.transports.live_config import ServerInfo, SourceRequest
from streameval.transports.profiles import ServerProfile
from streameval.transports.profiles.conditioning import prepare_case, send_start, sends_case
from streameval.transports.profiles.keychannel import HttpPostOut, KeyChannel, KeyOut, WsOut
from streameval.transports.refusals import REFUSED
from streameval.transports.websocket.lease import Lease, display_url
from streameval.transports.websocket.messages import Incoming, MessageTally, read_binary, read_text

if TYPE_CHECKING:
    from streameval.cases.conditioning import Conditioning

CLOSE_CODES = {
    1000: "normal closure",
    1001: "going away",
    1002: "protocol error",
    1003: "unsupported data",
    1006: "abnormal closure, no close frame",
    1007: "invalid payload",
    1008: "policy violation",
    1009: "message too big",
    1011: "internal server error",
    1012: "service restart",
    1013: "try again later",
}
SILENT_HINT_S = 2.0
"""Silent this long before a drop: the drop may be the server's idle/heartbeat timeout."""


def close_description(code: int | None, reason: str) -> str:
    name = CLOSE_CODES.get(code or 0, "")
    what = f"code {code}" + (f" {name}" if name else "") if code else "no close code"
    return what + (f", reason {reason!r}" if reason else "")


async def open_keys_url(session: Any, url: str, max_bytes: int) -> tuple[KeyOut, Any]:
    """``--keys-url``: POST to http(s)://, or messages on a ws(s):// socket of its own."""
    import aiohttp

    scheme = url.split("://", 1)[0]
    if scheme in ("http", "https"):
        return HttpPostOut(session, url), None
    if scheme in ("ws", "wss"):
        try:
            ws = await session.ws_connect(url, max_msg_size=max_bytes, autoping=True)
        except (aiohttp.ClientError, OSError) as exc:
            raise BadInputError(url, f"keys WebSocket unreachable: {exc}") from None
        return WsOut(ws), ws
    raise BadInputError("--keys-url", f"{url!r}: expected http(s):// or ws(s)://")


class WebSocketSource(LiveSource):
    scheme = "ws"

    def __init__(
        self,
        request: SourceRequest,
        *,
        profile: ServerProfile,
        key_names: dict[str, str],
        keys_url: str | None = None,
        conditioning: Conditioning | None = None,
        kept: KeptSocket | None = None,
    ) -> None:
        url = request.url
        # a claimed session (``[lease]``): ``url`` is the claim URL, its passphrase never shown;
        # a ws:// URL is the engine's own socket, reached without the router's claim
        lease = profile.lease if url.split("://", 1)[0] in ("http", "https") else None
        shown_as = redact_url(display_url(url, lease.secret)) if lease else url
        self._lease = Lease(lease, url, shown_as) if lease else None
        shown = self._lease.shown if self._lease is not None else url
        super().__init__(request, shown=shown)
        self._target = url  # what we connect to (the claim URL, or the socket itself)
        self.conditioning = conditioning
        self.kept = kept if profile.conditioning.start == "reset" else None
        self.reused = False  # this session's socket was kept from the case before
        self.profile = profile
        self.key_names = key_names
        self.keys_url = keys_url
        self.chunks_from_server = profile.stats is not None
        self._session: Any = None
        self._ws: Any = None
        self._keys_ws: Any = None
        self.channel: KeyChannel | None = None
        self._ready = asyncio.Event()
        self._announced: float | None = None
        self._n = 0
        self.t_open: float | None = None
        self.tally = MessageTally()
        """Every message the server sent, by kind (named when a session waits in vain)."""

    async def open_transport(self) -> ServerInfo:
        if self.kept is not None and self.kept.usable():
            self._session, self._ws, self._keys_ws = self.kept.take()
            self.reused = True
        else:
            if self.kept is not None:
                await self.kept.close()  # a socket the case before lost: a new one
            await self._connect()
        out: KeyOut = WsOut(self._ws)
        if self.profile.keys.channel == "keys-url":
            if not self.keys_url:
                raise BadInputError(
                    self.url, f"profile {self.profile.name!r} sends keys to --keys-url URL"
                )
            if self._keys_ws is not None:
                out = WsOut(self._keys_ws)
            else:
                out, self._keys_ws = await open_keys_url(
                    self._session, self.keys_url, self.profile.frames.max_message_bytes
                )
        fps = self.fps_hint or self.profile.fps or DEFAULT_FPS
        self.fps_origin = "profile" if self.profile.fps else "default"
        self.channel = KeyChannel(
            self.profile, self.key_names, out, fps=fps, episode=self.episode, on_lost=self.lost
        )
        prepare_case(self.channel, self.conditioning)
        try:
            self.channel.check(self.keys)
        except TemplateError as exc:
            raise BadInputError(self.profile.path, str(exc)) from None
        self._tasks.append(asyncio.create_task(self._read()))
        if self.profile.ready is None:
            self._ready.set()
        self.t_open = time.perf_counter()
        host = urlsplit(self.url).hostname or "remote"
        return ServerInfo(host, fps)

    async def _connect(self) -> None:
        import aiohttp

        self._session = aiohttp.ClientSession()
        socket = self._target
        if self._lease is not None:
            socket = await self._claim()
        try:
            self._ws = await self._session.ws_connect(
                socket,
                max_msg_size=self.profile.frames.max_message_bytes,
                autoping=True,
                heartbeat=None,
            )
        except aiohttp.WSServerHandshakeError as exc:
            await self._release()
            raise BadInputError(self.url, f"not a WebSocket endpoint: HTTP {exc.status}") from None
        except (aiohttp.ClientError, OSError) as exc:
            await self._release()
            raise BadInputError(self.url, f"server unreachable: {exc}") from None
        if self._lease is not None:
            beat = self._lease.beat(self._session, self.lost, self._lease_warning)
            self._tasks.append(asyncio.create_task(beat))

    async def _claim(self) -> str:
        """Claim the session (``[lease]``) and check that the episode fits in it; the
        socket's URL. A claim the episode cannot use is released before the line is raised."""
        assert self._lease is not None
        claim = await self._lease.acquire(self._session)
        need = len(self.keys) * self.config.seconds_per_key
        if claim.expires_s is not None and need > claim.expires_s:
            await self._release()
            raise BadInputError(
                self.url,
                f"the server lends a session for {claim.expires_s:g} s, and this episode "
                f"needs {need:g} s ({len(self.keys)} keys of {self.config.seconds_per_key:g} "
                "s): give a shorter --seconds-per-key",
            )
        return claim.socket

    def _lease_warning(self, words: str) -> None:
        self._report("lease", f"{self.url}: {words}")

    async def _release(self) -> None:
        """Give a claimed session back (once); a failure is a warning line, never raised:
        the claim expires on the server by itself."""
        if self._lease is None or self._session is None:
            return
        problem = await self._lease.release(self._session)
        if problem is not None:
            import logging

            logging.getLogger(__name__).warning("%s: %s", self.url, problem)

    async def start_session(self) -> None:
        assert self.channel is not None
        await send_start(
            self.channel, self.conditioning, self._target, self._session, kept=self.reused
        )

    @property
    def sends_conditioning(self) -> bool:
        return sends_case(self.profile, self.conditioning)

    # ------------------------------------------------------------ reading

    async def _read(self) -> None:
        import aiohttp

        ws = self._ws
        code: int | None = None
        reason = ""
        try:
            while not self._ended:
                msg = await ws.receive()
                if msg.type == aiohttp.WSMsgType.TEXT:
                    self.handle("text", msg.data)
                elif msg.type == aiohttp.WSMsgType.BINARY:
                    self.handle("binary", msg.data)
                elif msg.type == aiohttp.WSMsgType.CLOSE:
                    code, reason = msg.data, str(msg.extra or "")
                    break
                elif msg.type == aiohttp.WSMsgType.ERROR:
                    code = ws.close_code or 1006
                    reason = " ".join(str(msg.data).split())
                    break
                elif msg.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
                    code = ws.close_code
                    break
        except (aiohttp.ClientError, ConnectionError, OSError) as exc:
            reason = str(exc)
        except Exception as exc:  # never a silent dead reader: the episode ends, says why
            self.lost(f"reading the WebSocket failed: {type(exc).__name__}: {exc}")
            return
        if not self._ended:
            self.lost(self.closed_reason(code or ws.close_code, reason))

    def closed_reason(self, code: int | None, reason: str) -> str:
        """One line for a socket that closed under us: the code, the reason, and whether the
        server may have dropped a silent client."""
        line = f"WebSocket closed by the server ({close_description(code, reason)})"
        if code == 1009:
            line += f": a message over the {self.profile.frames.max_message_bytes}-byte limit"
        if not self.log.keys_sent and not self._ready.is_set():
            line += " before it answered configure"
        silence = self.channel.silence() if self.channel is not None else None
        if silence is None and self.t_open is not None:
            silence = time.perf_counter() - self.t_open
        if silence is not None and silence >= SILENT_HINT_S:
            beat = self.profile.keys.heartbeat_s
            if not beat:
                line += (
                    f"; we had sent nothing for {silence:.1f} s and profile "
                    f"{self.profile.name!r} sends no heartbeat: this server may need one "
                    "([keys] heartbeat_s and [templates.heartbeat])"
                )
            else:
                line += f"; nothing sent for {silence:.1f} s (heartbeat every {beat:g} s)"
        return line

    def handle(self, kind: Literal["text", "binary"], data: str | bytes) -> None:
        """One server message (the reader calls this; so does the message fuzz suite)."""
        if self._ended:
            return  # after the episode's end nothing more is reported
        self.tally.add(data)
        try:
            if isinstance(data, str):
                incoming = read_text(data, self.profile)
            else:
                incoming = read_binary(bytes(data), self.profile)
        except MessageProblem as exc:
            self.reject(str(exc))
            if kind == "binary" or self.profile.frames.encoding == "base64":
                self._n += 1  # a frame slot the server used: chunk positions stay aligned
            return
        except Exception as exc:  # a reader bug must cost one message, never the session
            self.reject(f"{kind} message could not be read ({type(exc).__name__}: {exc})")
            return
        self._apply(incoming)

    def _apply(self, incoming: Incoming) -> None:
        if incoming.kind == "frame" and incoming.image is not None:
            self.deliver(Frame(index=self._n, key=None, image=incoming.image), time.perf_counter())
            self._n += 1
            if self.channel is not None:
                self.channel.arrived()
        elif incoming.kind == "end":
            self.lost(f"the server ended the session: {incoming.text}")
        elif incoming.kind == "stats":
            self.server_chunk(incoming.frames, incoming.stats)
        elif incoming.kind == "ready":
            self.ready_seen = True
            self._announced = incoming.stats.get("fps")
            self._ready.set()
        elif incoming.kind == "error":
            if not self._session_started():
                # the answer to configure: the server will not run this session (a case
                # without the image it needs, say); its words are the episode's end
                self.lost(f"{REFUSED}{incoming.text}")
                self._ready.set()  # nothing more to wait for: the key plan stops at once
                return
            self._report("server_error", f"{self.url}: server says: {incoming.text}")

    def _session_started(self) -> bool:
        """The server took the session: it answered configure (``[ready]``), or, with no such
        answer in the profile, sent a frame; either way, keys went out."""
        if self.log.keys_sent:
            return True
        if self.profile.ready is not None:
            return self._ready.is_set()
        return self._n > 0

    # ------------------------------------------------------------ LiveSource hooks

    def announces_fps(self) -> bool:
        return self.profile.ready is not None and self.profile.ready.fps is not None

    def announced_fps(self) -> float | None:
        return self._announced

    async def wait_ready(self) -> None:
        from streameval.transports.profiles.ready import await_ready

        await await_ready(self._ready, self.profile, "to configure", self.tally.describe())

    def stall_reason(self) -> str | None:
        """Frames arrive but the session never started: the server does not send the
        message the profile waits for (a WorldFoundry-style server without ``ready``)."""
        ready = self.profile.ready
        if ready is None or self._ready.is_set() or self._n == 0:
            return None
        return (
            f"the server streams frames but never sent {ready.match.fields}, the message "
            f"profile {self.profile.name!r} waits for before the first key (it sent "
            f"{self.tally.describe()}): remove [ready] from the profile, or match a message "
            "it does send"
        )

    def on_chunk_closed(self) -> None:
        if self.channel is not None:
            self.channel.chunk_closed()

    def on_frame_admitted(self) -> None:
        if self.channel is not None:
            self.channel.frame()

    async def send_step(self, index: int, key: str) -> None:
        raise NotImplementedError("WebSocket servers play at their own rate (stream mode)")

    async def send_key(
        self, kind: Literal["keydown", "keyup", "heartbeat"], key: str | None
    ) -> None:
        assert self.channel is not None
        await self.channel.key(kind, key)

    async def close_transport(self) -> None:
        if self.channel is not None:
            await self.channel.close()
        open_ = self._ws is not None and not self._ws.closed
        if self.kept is not None and self.ended_complete and open_:
            # the next case resets on this socket (our reader is gone: base.close cancelled it)
            self.kept.keep(self._session, self._ws, self._keys_ws)
            self._session = self._ws = self._keys_ws = None
            return
        for ws in (self._keys_ws, self._ws):
            if ws is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(ws.close(), 2.0)
        with contextlib.suppress(Exception):
            await self._release()  # however the episode ended: the GPU goes back
        if self._session is not None:
            with contextlib.suppress(Exception):
                await self._session.close()


class KeptSocket:
    """A WebSocket kept open from one case to the next (``[conditioning] start = "reset"``):
    a case that ended complete leaves its socket here, the next one takes it and sends the
    profile's ``reset``; a case that ended otherwise closes it, and the next one connects
    again. The owner (the case opener) closes it when the run is over."""

    def __init__(self) -> None:
        self._parts: tuple[Any, Any, Any] | None = None

    def usable(self) -> bool:
        return self._parts is not None and not self._parts[1].closed

    def keep(self, session: Any, ws: Any, keys_ws: Any) -> None:
        self._parts = (session, ws, keys_ws)

    def take(self) -> tuple[Any, Any, Any]:
        assert self._parts is not None
        parts, self._parts = self._parts, None
        return parts

    async def close(self) -> None:
        if self._parts is None:
            return
        session, ws, keys_ws = self.take()
        for socket in (keys_ws, ws):
            if socket is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(socket.close(), 2.0)
        with contextlib.suppress(Exception):
            await session.close()

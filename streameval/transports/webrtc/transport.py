"""``attach webrtc+http://HOST:PORT/PATH``: a WebRTC model server, public style or ours.

Public style (the aiortc examples, browser-game servers): the offer carries a receive-only
video transceiver and a data channel ``keys``; it is POSTed as JSON ``{"sdp", "type"}`` and
the JSON answer read back. Keys go on the channel as JSON text (keydown/keyup with the
browser's key names, ``--key-map`` to change them) with a heartbeat every second; frames
come over the lossy video codec and say nothing of their key: alignment is inferred.

Lossless mode (``lossless=True``, our protocol, ``streameval serve --webrtc``): a second
channel ``streameval`` carries msgpack ``step`` messages out and whole frames back (index,
key, pose, depth, intrinsics; chunked, ``chunks.py``), so the episode is conditioned and
scored exactly as in-process.

With a server profile (``--profile keycode``, ``profiles/``), the keys channel takes the
profile's label (world-arcade: ``controls``) and its messages come from the profile's
templates (numeric keyCodes, its heartbeat interval; ``keychannel.py``). An answer sent as a
server-sent event stream (world-arcade streams loading lines, then an ``answer`` event) is read
as well as a plain JSON answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from streameval.constants import DEFAULT_FPS
from streameval.errors import BadInputError, WireError
from streameval.protocol.public_keys import BROWSER_KEYS, public_key_message
from streameval.protocol.wire import MAX_MESSAGE_BYTES, Frame, Hello, Reset, Step, decode, encode
from streameval.transports.base import LiveSource
from streameval.transports.live_config import ServerInfo, SourceRequest
from streameval.transports.refusals import REFUSED
from streameval.transports.webrtc.chunks import Reassembler
from streameval.transports.webrtc.loopback import (
    LOOPBACK_HOSTS,
    peer_connection,
    use_loopback_candidates,
)

if TYPE_CHECKING:
    from streameval.cases.conditioning import Conditioning
    from streameval.transports.profiles import ServerProfile
    from streameval.transports.profiles.keychannel import KeyChannel

MAX_ANSWER_BYTES = 1024 * 1024


def http_url(url: str) -> str:
    """``webrtc+http://…`` → ``http://…`` (also ``mjpeg+http``)."""
    scheme, sep, rest = url.partition("+")
    if not sep or not rest.startswith(("http://", "https://")):
        raise BadInputError(url, f"expected {scheme}+http://HOST:PORT/PATH")
    return rest


class WebRTCSource(LiveSource):
    scheme = "webrtc"

    def __init__(
        self,
        request: SourceRequest,
        *,
        key_names: dict[str, str] | None = None,
        lossless: bool = False,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        profile: ServerProfile | None = None,
        conditioning: Conditioning | None = None,
    ) -> None:
        super().__init__(request)
        url = request.url
        self.conditioning = conditioning
        self.profile = profile
        self.channel: KeyChannel | None = None
        self.endpoint = http_url(url)
        self.key_names = key_names or dict(BROWSER_KEYS)
        self.lossless = lossless
        self.mode = "step" if lossless else "stream"
        self.max_message_bytes = max_message_bytes
        self._pc: Any = None
        self._keys_channel: Any = None
        self._ours: Any = None
        self._hello: asyncio.Future[Hello] | None = None
        self._frames_seen = 0
        # a profile's [ready] on the key channel: the session's start, and the fps it announces
        self._ready = asyncio.Event()
        self._announced: float | None = None

    async def open_transport(self) -> ServerInfo:
        host = urlsplit(self.endpoint).hostname or ""
        if host in LOOPBACK_HOSTS:
            use_loopback_candidates()
        loop = asyncio.get_running_loop()
        pc = self._pc = peer_connection()
        keys_open = loop.create_future()
        label = self.profile.keys.datachannel if self.profile is not None else "keys"
        self._keys_channel = pc.createDataChannel(label)

        def on_open() -> None:
            if not keys_open.done():
                keys_open.set_result(True)

        self._keys_channel.on("open", on_open)
        if self.lossless:
            self._hello = loop.create_future()
            self._ours = pc.createDataChannel("streameval")
            reassembler = Reassembler(self.max_message_bytes)
            self._ours.on("message", lambda m: self._on_ours(m, reassembler))
        else:
            pc.addTransceiver("video", direction="recvonly")

            @pc.on("track")  # type: ignore[untyped-decorator]
            def on_track(track: Any) -> None:
                if track.kind == "video":
                    self._tasks.append(asyncio.create_task(self._read_video(track)))

        @pc.on("connectionstatechange")  # type: ignore[untyped-decorator]
        def on_state() -> None:
            if pc.connectionState in ("failed", "closed") and self._started:
                self.lost(self._dropped(f"peer connection {pc.connectionState}"))

        await pc.setLocalDescription(await pc.createOffer())
        answer = await self._post_offer(pc.localDescription.sdp, pc.localDescription.type)
        from aiortc import RTCSessionDescription

        try:
            await pc.setRemoteDescription(RTCSessionDescription(answer["sdp"], answer["type"]))
        except Exception as exc:
            raise BadInputError(self.url, f"server's answer is not usable: {exc}") from None
        await keys_open
        if self.profile is not None:
            await self._start_profile(label)
        if self._hello is not None:
            hello = await self._hello
            self._send_ours(Reset(self.episode))
            return ServerInfo(hello.model, hello.fps, hello.width or None, hello.height or None)
        own = self.profile.fps if self.profile else None
        self.fps_origin = "profile" if own else "default"
        return ServerInfo(host, own or DEFAULT_FPS)

    async def _start_profile(self, label: str) -> None:
        from streameval.errors import TemplateError
        from streameval.transports.profiles.conditioning import prepare_case
        from streameval.transports.profiles.keychannel import ChannelOut, KeyChannel

        assert self.profile is not None
        fps = self.fps_hint or self.profile.fps or DEFAULT_FPS
        self.channel = KeyChannel(
            self.profile,
            self.key_names,
            ChannelOut(self._keys_channel),
            fps=fps,
            episode=self.episode,
            on_lost=self.lost,
        )
        prepare_case(self.channel, self.conditioning)
        try:
            self.channel.check(self.keys)
        except TemplateError as exc:
            raise BadInputError(self.profile.path, str(exc)) from None

        if self.profile.error is not None or self.profile.ready is not None:
            self._keys_channel.on("message", self._on_profile_message)

        @self._keys_channel.on("close")  # type: ignore[untyped-decorator]
        def on_close() -> None:
            if self._started and not self._ended:
                self.lost(self._dropped(f"data channel {label!r} closed by the server"))

    def _on_profile_message(self, message: Any) -> None:
        """A message the server sends on the key channel: the profile's ``[ready]`` starts the
        session (with the fps it announces, which the session then runs at), its ``[error]`` is
        the server refusing (a case start it cannot take), the episode's end in its own words."""
        from streameval.errors import MessageProblem
        from streameval.transports.websocket.messages import read_text

        assert self.profile is not None
        if not isinstance(message, str) or len(message) > 64 * 1024:
            return
        try:
            incoming = read_text(message, self.profile)
        except MessageProblem:
            return
        if incoming.kind == "ready":
            self.ready_seen = True
            self._announced = incoming.stats.get("fps")
            self._ready.set()
        elif incoming.kind == "error":
            self.lost(f"{REFUSED}{incoming.text}")

    def announces_fps(self) -> bool:
        return (
            self.profile is not None
            and self.profile.ready is not None
            and self.profile.ready.fps is not None
        )

    def announced_fps(self) -> float | None:
        return self._announced

    async def wait_ready(self) -> None:
        from streameval.transports.profiles.ready import await_ready

        if self.profile is not None:
            await await_ready(self._ready, self.profile, "on the data channel")

    async def start_session(self) -> None:
        from streameval.transports.profiles.conditioning import send_start

        if self.channel is not None:
            await send_start(self.channel, self.conditioning, self.url)

    @property
    def sends_conditioning(self) -> bool:
        from streameval.transports.profiles.conditioning import sends_case

        return sends_case(self.profile, self.conditioning)

    def _dropped(self, what: str) -> str:
        """What a drop says: with a profile, whether we had gone silent (a server that wants
        a heartbeat drops a peer that sends none)."""
        silence = self.channel.silence() if self.channel is not None else None
        if self.profile is None or silence is None or silence < 2.0:
            return what
        if not self.profile.keys.heartbeat_s:
            return (
                f"{what}; we had sent nothing for {silence:.1f} s and profile "
                f"{self.profile.name!r} sends no heartbeat: this server may need one"
            )
        return f"{what}; nothing sent for {silence:.1f} s"

    async def _post_offer(self, sdp: str, kind: str) -> dict[str, str]:
        import aiohttp

        try:
            async with (
                aiohttp.ClientSession() as session,
                session.post(self.endpoint, json={"sdp": sdp, "type": kind}) as response,
            ):
                if response.status != 200:
                    text = (await response.text())[:200]
                    raise BadInputError(
                        self.url, f"server refused the offer: HTTP {response.status} {text}"
                    )
                if response.headers.get("Content-Type", "").startswith("text/event-stream"):
                    answer = await _answer_event(response, self.url)
                else:
                    answer = await response.json(content_type=None)
        except aiohttp.ClientError as exc:
            raise BadInputError(self.url, f"server unreachable: {exc}") from None
        except ValueError:
            raise BadInputError(self.url, "server's answer is not JSON") from None
        if not (isinstance(answer, dict) and {"sdp", "type"} <= answer.keys()):
            raise BadInputError(self.url, 'server\'s answer lacks "sdp" and "type"')
        return answer

    async def _read_video(self, track: Any) -> None:
        from aiortc.mediastreams import MediaStreamError

        while not self._ended:
            try:
                frame = await track.recv()
            except MediaStreamError:
                self.lost("video track ended (server disconnected)")
                return
            image = frame.to_ndarray(format="rgb24")
            self.deliver(Frame(index=self._frames_seen, key=None, image=image))
            self._frames_seen += 1

    def _on_ours(self, message: Any, reassembler: Reassembler) -> None:
        if not isinstance(message, bytes):
            self.reject("text on the streameval channel (expected msgpack chunks)")
            return
        try:
            whole = reassembler.add(message)
            if whole is None:
                return
            decoded = decode(whole, max_bytes=self.max_message_bytes)
        except (ValueError, WireError) as exc:
            self.reject(str(exc))
            return
        if isinstance(decoded, Hello) and self._hello is not None and not self._hello.done():
            self._hello.set_result(decoded)
        elif isinstance(decoded, Frame):
            self.deliver(decoded, time.perf_counter())

    def _send_ours(self, message: Step | Reset) -> None:
        self._ours.send(encode(message))

    async def send_step(self, index: int, key: str) -> None:
        self._send_ours(Step(index, key))

    async def send_key(
        self, kind: Literal["keydown", "keyup", "heartbeat"], key: str | None
    ) -> None:
        if self._keys_channel is None or self._keys_channel.readyState != "open":
            raise ConnectionError("data channel closed")
        if self.channel is not None:
            await self.channel.key(kind, key)
            return
        name = self.key_names.get(key, key) if key is not None else None
        self._keys_channel.send(public_key_message(kind, name))

    async def close_transport(self) -> None:
        if self.channel is not None:
            await self.channel.close()
        if self._pc is not None:
            with contextlib.suppress(Exception):
                await self._pc.close()
            self._pc = None


async def _answer_event(response: Any, url: str) -> Any:
    """The ``answer`` event of a server-sent event stream (``event: answer`` / ``data: {...}``);
    ``event: error`` is the server refusing. At most ``MAX_ANSWER_BYTES`` are read."""
    import json

    event, data, read = "", [], 0
    async for raw in response.content:
        read += len(raw)
        if read > MAX_ANSWER_BYTES:
            break
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line:
            if event == "answer":
                return json.loads("\n".join(data))
            if event == "error":
                raise BadInputError(url, f"server refused the offer: {' '.join(data)[:200]}")
            event, data = "", []
    raise BadInputError(url, "the server's event stream ended without an answer")

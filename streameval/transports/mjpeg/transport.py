"""``attach mjpeg+http://HOST:PORT/PATH --keys-url URL``: a ``multipart/x-mixed-replace``
JPEG stream; keys POSTed to ``--keys-url`` as the public JSON messages.

Each part is one JPEG; a part that does not decode is counted and reported (the episode goes
on); a part over the size limit is refused before it is read whole.

With a server profile (``--profile press``, ``gamecraft``; ``profiles/``), keys are the
profile's templates, sent to ``--keys-url`` as POSTs (http(s)://) or on a WebSocket of their
own (ws(s)://), with its hold semantics (``keychannel.py``: one press per chunk for servers
that generate a block per press); chunk boundaries come from bursts of arrivals.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any, Literal

from streameval.constants import DEFAULT_FPS
from streameval.errors import BadInputError
from streameval.protocol.public_keys import BROWSER_KEYS, public_key_message
from streameval.protocol.wire import MAX_FRAME_SIDE, Frame
from streameval.transports.base import LiveSource
from streameval.transports.live_config import ServerInfo, SourceRequest
from streameval.transports.webrtc.transport import http_url

if TYPE_CHECKING:
    from streameval.cases.conditioning import Conditioning
    from streameval.transports.profiles import ServerProfile
    from streameval.transports.profiles.keychannel import KeyChannel

MAX_JPEG_BYTES = 16 * 1024 * 1024


class MjpegSource(LiveSource):
    scheme = "mjpeg"

    def __init__(
        self,
        request: SourceRequest,
        *,
        keys_url: str,
        key_names: dict[str, str] | None = None,
        profile: ServerProfile | None = None,
        conditioning: Conditioning | None = None,
    ) -> None:
        super().__init__(request)
        url = request.url
        self.conditioning = conditioning
        self.profile = profile
        self.channel: KeyChannel | None = None
        self._keys_ws: Any = None
        self.endpoint = http_url(url)
        self.keys_url = keys_url
        self.key_names = key_names or dict(BROWSER_KEYS)
        self._session: Any = None
        self._response: Any = None
        self._n = 0

    async def open_transport(self) -> ServerInfo:
        import asyncio

        import aiohttp

        self._session = aiohttp.ClientSession()
        try:
            self._response = await self._session.get(self.endpoint)
        except aiohttp.ClientError as exc:
            raise BadInputError(self.url, f"server unreachable: {exc}") from None
        kind = self._response.headers.get("Content-Type", "")
        if self._response.status != 200 or not kind.startswith("multipart/"):
            raise BadInputError(
                self.url, f"not an MJPEG stream (HTTP {self._response.status}, {kind or 'no type'})"
            )
        own = self.profile.fps if self.profile else None
        self.fps_origin = "profile" if own else "default"
        fps = self.fps_hint or own or DEFAULT_FPS
        if self.profile is not None:
            await self._start_profile(fps)
        self._tasks.append(asyncio.create_task(self._read()))
        host = self.endpoint.split("/")[2]
        return ServerInfo(host, fps)

    async def _start_profile(self, fps: float) -> None:
        from streameval.errors import TemplateError
        from streameval.transports.profiles.conditioning import prepare_case
        from streameval.transports.profiles.keychannel import KeyChannel
        from streameval.transports.websocket.transport import open_keys_url

        assert self.profile is not None
        out, self._keys_ws = await open_keys_url(
            self._session, self.keys_url, self.profile.frames.max_message_bytes
        )
        self.channel = KeyChannel(
            self.profile, self.key_names, out, fps=fps, episode=self.episode, on_lost=self.lost
        )
        prepare_case(self.channel, self.conditioning)
        try:
            self.channel.check(self.keys)
        except TemplateError as exc:
            raise BadInputError(self.profile.path, str(exc)) from None

    async def start_session(self) -> None:
        from streameval.transports.profiles.conditioning import send_start

        if self.channel is not None:
            await send_start(self.channel, self.conditioning, self.url, self._session)

    @property
    def sends_conditioning(self) -> bool:
        from streameval.transports.profiles.conditioning import sends_case

        return sends_case(self.profile, self.conditioning)

    def on_chunk_closed(self) -> None:
        if self.channel is not None:
            self.channel.chunk_closed()

    def on_frame_admitted(self) -> None:
        if self.channel is not None:
            self.channel.frame()

    async def _read(self) -> None:
        import aiohttp

        reader = aiohttp.MultipartReader.from_response(self._response)
        try:
            while not self._ended:
                part = await reader.next()
                if part is None:
                    self.lost("stream ended (server closed the connection)")
                    return
                data = await part.read()  # type: ignore[union-attr]
                if len(data) > MAX_JPEG_BYTES:
                    self.reject(f"JPEG part of {len(data)} bytes over {MAX_JPEG_BYTES}")
                    continue
                self._deliver_jpeg(bytes(data))
        except (aiohttp.ClientError, ValueError) as exc:
            self.lost(f"stream broken: {exc}")

    def _deliver_jpeg(self, data: bytes) -> None:
        import cv2
        import numpy as np

        bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        if bgr is None or max(bgr.shape[:2]) > MAX_FRAME_SIDE:
            self.reject(f"JPEG part {self._n} of {len(data)} bytes does not decode")
            self._n += 1
            return
        image = np.asarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), dtype=np.uint8)
        self.deliver(Frame(index=self._n, key=None, image=image), time.perf_counter())
        self._n += 1

    async def send_step(self, index: int, key: str) -> None:
        raise NotImplementedError("MJPEG servers play at their own rate (stream mode)")

    async def send_key(
        self, kind: Literal["keydown", "keyup", "heartbeat"], key: str | None
    ) -> None:
        if self.channel is not None:
            await self.channel.key(kind, key)
            return
        name = self.key_names.get(key, key) if key is not None else None
        import aiohttp

        from streameval.transports.profiles.keychannel import SEND_TIMEOUT_S

        async with self._session.post(
            self.keys_url,
            data=public_key_message(kind, name),
            headers={"Content-Type": "application/json"},
            timeout=aiohttp.ClientTimeout(total=SEND_TIMEOUT_S),
        ) as response:
            if response.status >= 400:
                raise ConnectionError(f"{self.keys_url}: HTTP {response.status}")

    async def close_transport(self) -> None:
        if self.channel is not None:
            await self.channel.close()
        if self._keys_ws is not None:
            with contextlib.suppress(Exception):
                await self._keys_ws.close()
        if self._response is not None:
            self._response.close()
        if self._session is not None:
            with contextlib.suppress(Exception):
                await self._session.close()

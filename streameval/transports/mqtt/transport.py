"""``attach mqtt://…/SESSION``: our protocol (``PROTOCOL.md``) through an MQTT broker.

The server publishes a retained ``hello`` on ``status`` and frames on ``frames``; the
evaluator publishes ``reset``, then ``step`` (video clock) or ``keydown``/``keyup``/
``heartbeat`` (wall clock) on ``keys``. Payloads are msgpack with size limits
(``protocol/wire.py``). A lost broker is retried with backoff; the frames missed meanwhile
are counted as a gap, and the episode goes on if the broker comes back within the no-frame
timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any, Literal

from streameval.errors import BadInputError, WireError
from streameval.protocol.case_start import MAX_START_TEXT, CaseStart
from streameval.protocol.wire import (
    MAX_MESSAGE_BYTES,
    Bye,
    Frame,
    Heartbeat,
    Hello,
    KeyDown,
    KeyUp,
    Message,
    Reset,
    Step,
    decode,
    encode,
)
from streameval.transports.base import LiveSource
from streameval.transports.live_config import ServerInfo, SourceRequest
from streameval.transports.mqtt.url import (
    MqttTarget,
    client_kwargs,
    connect_problem,
    parse_mqtt_url,
)
from streameval.transports.refusals import REFUSED

if TYPE_CHECKING:
    from streameval.cases.conditioning import Conditioning

RECONNECT_BACKOFF_S = (0.2, 0.5, 1.0, 2.0, 4.0)
BYE_GRACE_S = 2.0


def takes_no_image(url: str, hello: Hello) -> str:
    """The line for a server whose model cannot start from a case's image."""
    takes = ", ".join(hello.start) or "nothing of a case start"
    return (
        f"the model served on {url} ({hello.model!r}) cannot start from a case's image (its "
        f"hello takes: {takes}): serve a model whose reset takes image= "
        "(reset(self, image=None, prompt=None, intrinsics=None)), with a streameval that "
        "sends it"
    )


def case_start(conditioning: Conditioning, url: str, hello: Hello) -> CaseStart | None:
    """The ``reset``'s case start for a server that said in its ``hello`` what it takes
    (None: it takes nothing, or the case has nothing to send). A case image it cannot take
    is refused here, never dropped: the case would run from wherever the model starts."""
    case = conditioning.case
    if conditioning.has_image and "image" not in hello.start:
        raise BadInputError(url, takes_no_image(url, hello))
    if not hello.start:
        return None
    prompt = case.prompt if "prompt" in hello.start else None
    if prompt is not None and len(prompt) > MAX_START_TEXT:
        raise BadInputError(
            case.origin or case.key,
            f"case {case.key}: a caption of {len(prompt):,} characters does not fit our "
            f"protocol's {MAX_START_TEXT:,}",
        )
    takes_image = conditioning.has_image and "image" in hello.start
    return CaseStart(
        image=conditioning.image_bytes() if takes_image else None,
        mime=(case.image_mime or "image/jpeg") if takes_image else None,
        prompt=prompt,
        intrinsics=case.intrinsics if "intrinsics" in hello.start else None,
        case=case.key,
    )


class MqttSource(LiveSource):
    scheme = "mqtt"

    def __init__(
        self,
        request: SourceRequest,
        *,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        conditioning: Conditioning | None = None,
    ) -> None:
        self.target: MqttTarget = parse_mqtt_url(request.url)
        super().__init__(request, shown=self.target.display)
        # our protocol says which key conditioned each frame: the video clock is exact
        self.mode = "step" if request.config.clock == "video" else "stream"
        self.max_message_bytes = max_message_bytes
        self._client: Any = None
        self._hello: asyncio.Future[Hello] | None = None
        self._reader: asyncio.Task[None] | None = None
        self.conditioning = conditioning
        self._sent_start = False

    async def _connect_client(self) -> Any:
        import aiomqtt

        client = aiomqtt.Client(**client_kwargs(self.target))  # type: ignore[arg-type]
        await client.__aenter__()
        await client.subscribe(self.target.topic("status"), qos=1)
        await client.subscribe(self.target.topic("frames"), qos=0)
        return client

    async def open_transport(self) -> ServerInfo:
        import aiomqtt

        try:
            self._client = await self._connect_client()
        except aiomqtt.MqttError as exc:
            raise BadInputError(self.url, connect_problem(exc)) from None
        self._hello = asyncio.get_running_loop().create_future()
        self._reader = asyncio.create_task(self._read())
        self._tasks.append(self._reader)
        try:
            hello = await asyncio.wait_for(
                asyncio.shield(self._hello), self.config.connect_timeout_s
            )
        except TimeoutError:
            raise BadInputError(
                self.url,
                f"no model server on session {self.target.session!r} "
                f"(no hello within {self.config.connect_timeout_s:g} s)",
            ) from None
        start = None
        if self.conditioning is not None:
            start = case_start(self.conditioning, self.url, hello)
            self._sent_start = start is not None
        await self._publish(Reset(self.episode, start))
        return ServerInfo(hello.model, hello.fps, hello.width or None, hello.height or None)

    @property
    def sends_conditioning(self) -> bool:
        return self._sent_start

    async def _publish(self, message: Message) -> None:
        import aiomqtt

        try:
            await self._client.publish(self.target.topic("keys"), encode(message), qos=1)
        except aiomqtt.MqttError:
            # broker gone: the reader reconnects, then steps are asked again and the held
            # key is sent again (``_read``); the episode goes on if the broker comes back
            self.log.count("unsent_keys")

    async def send_step(self, index: int, key: str) -> None:
        await self._publish(Step(index, key))

    async def send_key(
        self, kind: Literal["keydown", "keyup", "heartbeat"], key: str | None
    ) -> None:
        if kind == "heartbeat":
            await self._publish(Heartbeat())
        elif kind == "keydown" and key is not None:
            await self._publish(KeyDown(key))
        elif key is not None:
            await self._publish(KeyUp(key))

    async def close_transport(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._publish(Bye("evaluator done"))
            with contextlib.suppress(Exception):
                await self._client.__aexit__(None, None, None)
            self._client = None

    def _handle(self, topic: str, payload: bytes) -> None:
        try:
            message = decode(payload, max_bytes=self.max_message_bytes)
        except WireError as exc:
            self.reject(f"{topic}: {exc}")
            waiting = self._hello is not None and not self._hello.done()
            if waiting and topic == self.target.topic("status"):
                # the server's hello is all we wait for: say why now, not "no hello" later
                self._hello.set_exception(  # type: ignore[union-attr]
                    BadInputError(self.url, f"the server's hello is refused: {exc}")
                )
            return
        if isinstance(message, Hello):
            if self._hello is not None and not self._hello.done():
                self._hello.set_result(message)
        elif isinstance(message, Frame):
            self.deliver(message, time.perf_counter())
        elif isinstance(message, Bye) and message.episode:
            # our start refused, or the model failed a step: nothing more will come
            if message.episode == self.episode and self.log.n_frames:
                self.lost(f"the server ended the episode: {message.reason}")
            elif message.episode == self.episode:
                self.lost(f"{REFUSED}{message.reason}")
        elif isinstance(message, Bye) and self._started:
            self._tasks.append(asyncio.create_task(self._bye(message.reason or "bye")))

    async def _bye(self, reason: str) -> None:
        """A server's bye ends the episode unless frames keep coming: a broker that shuts
        down publishes every client's will, though the server only lost the broker too."""
        frames, reconnects = self.log.n_frames, self.log.counter("reconnects")
        await asyncio.sleep(BYE_GRACE_S)
        # our own connection dropped too: the broker went away, not the server; the
        # no-frame timeout still ends the episode if the server does not come back
        if self.log.n_frames == frames and self.log.counter("reconnects") == reconnects:
            self.lost(f"server left: {reason}")

    async def _read(self) -> None:
        import aiomqtt

        attempt = 0
        while not self._ended:
            try:
                async for msg in self._client.messages:
                    attempt = 0
                    payload = msg.payload
                    # an empty retained message clears the status: nothing to decode
                    if isinstance(payload, bytes | bytearray) and payload:
                        self._handle(str(msg.topic), bytes(payload))
                return
            except aiomqtt.MqttError as exc:
                if attempt >= len(RECONNECT_BACKOFF_S):
                    self.lost(f"broker connection lost: {exc}")
                    return
                await asyncio.sleep(RECONNECT_BACKOFF_S[attempt])
                attempt += 1
                self.log.count("reconnects")
                with contextlib.suppress(Exception):
                    await self._client.__aexit__(None, None, None)
                with contextlib.suppress(aiomqtt.MqttError):
                    self._client = await self._connect_client()
                    self.resend_steps()
                    if self.mode == "stream" and self._held is not None:
                        await self._publish(KeyDown(self._held))

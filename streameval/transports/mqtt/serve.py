"""``serve --mqtt mqtt://HOST:PORT/SESSION``: a ``step(key)`` model on a broker session.

Publishes a retained ``hello`` on ``status``, with what of a case start the model's ``reset``
takes (``start``; cleared with an empty retained message and a ``bye`` when the server
stops), answers messages on ``keys`` (``host.ModelHost``) and publishes frames on
``frames``. A ``reset`` whose case start the model cannot take is answered with a ``bye``
naming the episode, on ``status``. Messages that fail validation are counted and logged,
never acted on.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import Any

from streameval.errors import WireError
from streameval.protocol.wire import (
    MAX_MESSAGE_BYTES,
    Bye,
    Frame,
    Hello,
    ImageEncoding,
    decode,
    encode,
)
from streameval.transports.host import ModelHost, start_names
from streameval.transports.mqtt.url import MqttTarget, client_kwargs, parse_mqtt_url

RECONNECT_BACKOFF_S = (0.2, 0.5, 1.0, 2.0, 4.0)


async def serve_mqtt(
    model: Any,
    url: str,
    *,
    name: str,
    fps: float,
    width: int,
    height: int,
    encoding: ImageEncoding = "raw",
    ready: asyncio.Event | None = None,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> None:
    """Serve until cancelled; a lost broker is retried with backoff (the model keeps its
    state, so an evaluator that reconnects too carries on where it was)."""
    import aiomqtt

    target = parse_mqtt_url(url)
    status = target.topic("status")
    clients: list[Any] = []
    ready = ready or asyncio.Event()  # set once connected: later losses are retried

    async def publish(frame: Frame) -> None:
        if not clients:
            return  # broker gone: the frame is lost, the evaluator counts the gap
        with contextlib.suppress(aiomqtt.MqttError):
            await clients[0].publish(
                target.topic("frames"), encode(frame, encoding=encoding), qos=0
            )

    async def refuse(episode: str, words: str) -> None:
        """The episode cannot go on (its start refused, a step failed): the host has said
        why on stderr; the evaluator reads it in a ``bye`` naming the episode."""
        if clients:
            with contextlib.suppress(aiomqtt.MqttError):
                await clients[0].publish(target.topic("status"), encode(Bye(words, episode)), qos=1)

    host = ModelHost(model, fps, publish, refuse=refuse)
    host.start()
    attempt = 0
    try:
        while True:
            try:
                await _serve_once(
                    target,
                    status,
                    name,
                    fps,
                    width,
                    height,
                    host,
                    clients,
                    ready,
                    max_message_bytes,
                )
                return
            except aiomqtt.MqttError as exc:
                clients.clear()
                if not ready.is_set():
                    raise  # never connected: the URL is wrong, say so at once
                delay = RECONNECT_BACKOFF_S[min(attempt, len(RECONNECT_BACKOFF_S) - 1)]
                print(f"serve: broker lost ({exc}); retrying in {delay:g} s", file=sys.stderr)
                await asyncio.sleep(delay)
                attempt += 1
    finally:
        await host.stop()


async def _serve_once(
    target: MqttTarget,
    status: str,
    name: str,
    fps: float,
    width: int,
    height: int,
    host: ModelHost,
    clients: list[Any],
    ready: asyncio.Event,
    max_message_bytes: int,
) -> None:
    import aiomqtt

    # the broker announces a crash for us: evaluators end the episode at once, not by timeout
    will = aiomqtt.Will(status, encode(Bye("server connection lost")), qos=1)
    async with aiomqtt.Client(**client_kwargs(target), will=will) as client:  # type: ignore[arg-type]
        await client.subscribe(target.topic("keys"), qos=1)
        # what of a case start the model takes: an evaluator sends no image it would drop
        hello = Hello(name, fps, width, height, start_names(host.model))
        await client.publish(status, encode(hello), qos=1, retain=True)
        clients[:] = [client]
        ready.set()
        try:
            async for msg in client.messages:
                payload = msg.payload
                if not isinstance(payload, bytes | bytearray):
                    continue
                try:
                    message = decode(bytes(payload), max_bytes=max_message_bytes)
                except WireError as exc:
                    print(f"serve: {status}: rejected message: {exc}", file=sys.stderr)
                    continue
                await host.handle(message)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await client.publish(status, encode(Bye("server stopped")), qos=1)
                await client.publish(status, b"", qos=1, retain=True)
            raise

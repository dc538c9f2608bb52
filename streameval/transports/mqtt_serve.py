"""``serve --mqtt mqtt://HOST:PORT/SESSION``: a ``step(key)`` model on a broker session.

Publishes a retained ``hello`` on ``status`` (cleared with an empty retained message and a
``bye`` when the server stops), answers messages on ``keys`` (``host.ModelHost``) and
publishes frames on ``frames``. Messages that fail validation are counted and logged, never
acted on.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import Any

from streameval.protocol.wire import (
    MAX_MESSAGE_BYTES,
    Bye,
    Frame,
    Hello,
    ImageEncoding,
    WireError,
    decode,
    encode,
)
from streameval.transports.host import ModelHost
from streameval.transports.mqtt_url import client_kwargs, parse_mqtt_url


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
    """Serve until cancelled."""
    import aiomqtt

    target = parse_mqtt_url(url)
    status = target.topic("status")
    # the broker announces a crash for us: evaluators end the episode at once, not by timeout
    will = aiomqtt.Will(status, encode(Bye("server connection lost")), qos=1)
    async with aiomqtt.Client(**client_kwargs(target), will=will) as client:  # type: ignore[arg-type]

        async def publish(frame: Frame) -> None:
            await client.publish(target.topic("frames"), encode(frame, encoding=encoding), qos=0)

        host = ModelHost(model, fps, publish)
        await client.subscribe(target.topic("keys"), qos=1)
        await client.publish(status, encode(Hello(name, fps, width, height)), qos=1, retain=True)
        host.start()
        if ready is not None:
            ready.set()
        rejected = 0
        try:
            async for msg in client.messages:
                payload = msg.payload
                if not isinstance(payload, bytes | bytearray):
                    continue
                try:
                    message = decode(bytes(payload), max_bytes=max_message_bytes)
                except WireError as exc:
                    rejected += 1
                    print(f"serve: {status}: rejected message: {exc}", file=sys.stderr)
                    continue
                await host.handle(message)
        finally:
            await host.stop()
            with contextlib.suppress(Exception):
                await client.publish(status, encode(Bye("server stopped")), qos=1)
                await client.publish(status, b"", qos=1, retain=True)

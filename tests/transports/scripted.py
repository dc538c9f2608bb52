"""A scripted model server on a real broker: answers each ``step`` with whatever payloads a
test's script returns (good frames, duplicates, garbage), through plain aiomqtt."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import aiomqtt
import numpy as np
from streameval.protocol.wire import Frame, Hello, Step, decode, encode

Script = Callable[[int, str], list[bytes]]
FPS = 16.0


def image(i: int, width: int = 96, height: int = 64) -> np.ndarray:
    """A textured frame panning right one pixel per index (flow is well posed)."""
    rng = np.random.default_rng(7)
    tex = rng.integers(0, 255, (height, width + 256, 3), dtype=np.uint8)
    return np.ascontiguousarray(tex[:, 128 - i : 128 - i + width])


def good(i: int, key: str, **kw: int) -> bytes:
    return encode(Frame(index=i, key=key, image=image(i, **kw)))


async def scripted_server(port: int, session: str, script: Script, ready: asyncio.Event) -> None:
    async with aiomqtt.Client("127.0.0.1", port) as client:
        base = f"streameval/{session}"
        await client.subscribe(f"{base}/keys", qos=1)
        hello = encode(Hello("scripted", FPS, 96, 64))
        await client.publish(f"{base}/status", hello, qos=1, retain=True)
        ready.set()
        async for msg in client.messages:
            message = decode(bytes(msg.payload))  # type: ignore[arg-type]
            if isinstance(message, Step):
                for payload in script(message.index, message.key):
                    await client.publish(f"{base}/frames", payload, qos=1)

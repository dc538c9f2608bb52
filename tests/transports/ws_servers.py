"""WebSocket world-model servers written from the public descriptions of the field's servers,
with plain aiohttp and no streameval code (the world model is handed in: ``chunked_world``).

- ``worldfoundry``: WorldFoundry Studio's realtime socket (``GET /api/realtime/ws``): the client
  sends ``{"type": "configure", "session": {...}}`` and gets ``configuring`` then ``ready``;
  actions ``{"type": "action", "action": {"event": "keydown"|"keyup", "key": k}}`` (w a s d,
  j l turn); frames are binary JPEG messages paced at 16 fps, generated 9 at a time under the
  keys held at the chunk's start; after each chunk a JSON ``chunk_done`` with ``frames``,
  ``generation_ms``, ``control_latency_ms``, ``queue_depth`` and ``dropped_frames``.
  ``fault`` makes it misbehave: ``close`` (1011 after 18 frames), ``never-ready``,
  ``garbage`` (non-JPEG and truncated frames), ``oversized``, ``text-frames`` (base64 text
  instead of binary), ``stale`` (drops a client silent for 2 s, 1008).
- ``camera``: a camera-pose socket (``GET /v1/realtime/world/camera``): msgpack
  ``{"type": "camera", "poses": N×4×4, "intrinsics": 3×3}`` per chunk; it follows the camera
  path (the motion between consecutive poses) and sends the chunk's frames as binary JPEG.
- ``command``: a style no built-in covers: keys as ``{"cmd": "move", "dir": "forward", "on":
  true}``, frames as base64 JPEG in ``{"event": "frame", "data": ...}``, chunks announced as
  ``{"event": "chunk", "n": 8, "gen_ms": ...}``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import time
from typing import Any

import msgpack
import numpy as np
from aiohttp import WSMsgType, web

from tests.transports.chunked_world import ChunkedWorld, jpeg

FPS = 16.0
WF_KEYS = {"w": "W", "s": "S", "a": "A", "d": "D", "j": "L", "l": "R"}
COMMAND_DIRS = {
    "forward": "W",
    "back": "S",
    "left": "A",
    "right": "D",
    "turn_left": "L",
    "turn_right": "R",
}


async def _start(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


async def _paced(
    ws: web.WebSocketResponse,
    queue: asyncio.Queue[Any],
    fps: float,
    catch_up_s: float = 0.0,
    sent: list[float] | None = None,
) -> None:
    """Send queued messages at ``fps`` (WorldFoundry's sender paces at the model's rate). A
    send more than a frame late starts the clock again, unless ``catch_up_s``: then a sender
    up to that late sends its late frames at once and keeps its long-run rate (a model that
    generates at exactly ``fps`` on a machine whose scheduler sometimes holds it back). An item
    ``(message, generated)`` is one message; ``sent`` gets the send time of each generated one
    (the server's true generation rate, beside what it pads with)."""
    deadline: float | None = None
    late = max(1 / fps, catch_up_s)
    while not ws.closed:
        item = await queue.get()
        now = time.monotonic()
        deadline = now if deadline is None or now - deadline > late else deadline + 1 / fps
        await asyncio.sleep(max(0.0, deadline - now))
        if isinstance(item, tuple):
            item, generated = item
            if generated and sent is not None:
                sent.append(time.monotonic())
        if isinstance(item, bytes):
            await ws.send_bytes(item)
        else:
            await ws.send_str(item)


def worldfoundry_app(model: Any, *, reverse: bool = False, delay_s: float = 0.0,
                     fault: str | None = None, pad: str | None = None,
                     stall_every: int = 0, stall_s: float = 0.0,
                     catch_up_s: float = 0.0,
                     sent: list[float] | None = None) -> web.Application:  # fmt: skip
    """``pad`` makes it a padding twin that announces twice its rate (32 fps) and paces out
    twice the frames its model generates: ``double`` sends every frame twice, ``blend``
    sends before each frame the midpoint of it and the one before; its ``chunk_done`` counts
    the frames sent. ``stall_every`` chunks, generation pauses ``stall_s`` seconds.
    ``catch_up_s``: the sender's lateness it catches up on; ``sent``: when each generated frame
    went out (``_paced``)."""
    rate = FPS * (2 if pad else 1)

    async def socket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=1024**2)
        await ws.prepare(request)
        first = await ws.receive()
        if first.type != WSMsgType.TEXT or json.loads(first.data).get("type") != "configure":
            await ws.close(code=1002, message=b"expected configure")
            return ws
        await ws.send_str(json.dumps({"type": "configuring", "transport": "ws"}))
        if fault == "never-ready":
            async for _ in ws:
                pass
            return ws
        await ws.send_str(json.dumps({"type": "ready", "fps": rate, "transport": "ws"}))
        world = ChunkedWorld(model, 9, reverse=reverse, delay_s=delay_s)
        queue: asyncio.Queue[Any] = asyncio.Queue()
        state = {"first": asyncio.Event(), "last_msg": time.monotonic(), "dropped": 0, "n": 0}
        arrivals: list[float] = []

        async def generate() -> None:
            await state["first"].wait()  # type: ignore[union-attr]
            while not ws.closed:
                while queue.qsize() > 4 * (2 if pad else 1):  # 4 generated frames ahead
                    await asyncio.sleep(0.01)
                key = world.held_now()
                frames, gen_ms = await world.generate(key)
                for image, generated in _padded(frames, pad, state):
                    queue.put_nowait((_frame_message(image, state, fault), generated))
                latency = (time.monotonic() - arrivals[0]) * 1000 if arrivals else None
                arrivals.clear()
                await ws.send_str(json.dumps({
                    "type": "chunk_done", "frames": len(frames) * (2 if pad else 1),
                    "generation_ms": round(gen_ms, 1),
                    "control_latency_ms": latency, "queue_depth": queue.qsize(),
                    "dropped_frames": state["dropped"],
                }))  # fmt: skip
                state["chunks"] = state.get("chunks", 0) + 1
                if stall_every and state["chunks"] % stall_every == 0:
                    await asyncio.sleep(stall_s)  # a stalled worker: the queue runs dry
                if fault == "close" and state["n"] >= 18:
                    await asyncio.sleep(0.3)
                    await ws.close(code=1011, message=b"worker crashed")
                    return

        async def stale() -> None:
            while not ws.closed:
                await asyncio.sleep(0.2)
                if time.monotonic() - state["last_msg"] > 2.0:  # type: ignore[operator]
                    await ws.close(code=1008, message=b"stale client")
                    return

        tasks = [
            asyncio.create_task(generate()),
            asyncio.create_task(_paced(ws, queue, rate, catch_up_s, sent)),
        ]
        if fault == "stale":
            tasks.append(asyncio.create_task(stale()))
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                state["last_msg"] = time.monotonic()
                body = json.loads(msg.data)
                if body.get("type") != "action":
                    continue
                action = body["action"]
                key = WF_KEYS.get(str(action.get("key")).lower())
                if key is None:
                    continue
                world.hold(key if action.get("event") == "keydown" else None)
                arrivals.append(time.monotonic())
                state["first"].set()  # type: ignore[union-attr]
        finally:
            for task in tasks:
                task.cancel()
        return ws

    app = web.Application()
    app.router.add_get("/api/realtime/ws", socket)
    return app


def _padded(
    frames: list[np.ndarray], pad: str | None, state: dict[str, Any]
) -> list[tuple[np.ndarray, bool]]:
    """The frames a padding twin sends for one generated chunk (``worldfoundry_app``), each
    with whether the model generated it."""
    if pad == "double":
        return [(image, copy == 0) for image in frames for copy in range(2)]
    if pad != "blend":
        return [(image, True) for image in frames]
    out: list[tuple[np.ndarray, bool]] = []
    for image in frames:
        prev = state.get("prev", image)
        mid = (prev.astype(np.uint16) + image.astype(np.uint16) + 1) // 2
        out += [(mid.astype(np.uint8), False), (image, True)]
        state["prev"] = image
    return out


def _frame_message(image: np.ndarray, state: dict[str, Any], fault: str | None) -> bytes | str:
    state["n"] += 1
    data = jpeg(image)
    n = state["n"]
    if fault == "garbage" and n % 10 == 5:
        return b"GIF89a not a jpeg at all" if n % 20 == 5 else data[: len(data) // 2]
    if fault == "oversized" and n == 30:
        return b"\xff\xd8\xff" + b"\x00" * (2 * 1024 * 1024)
    if fault == "text-frames":
        return base64.b64encode(data).decode()
    return data


def _key_of_motion(prev: np.ndarray, cur: np.ndarray) -> str:
    """The world key a camera move stands for (OpenCV camera axes: z forward, x right)."""
    delta = np.linalg.inv(prev) @ cur
    yaw = math.atan2(delta[0, 2], delta[2, 2])
    tx, tz = delta[0, 3], delta[2, 3]
    if abs(yaw) > 1e-6:
        return "R" if yaw > 0 else "L"
    if max(abs(tx), abs(tz)) < 1e-9:
        return "-"
    if abs(tz) >= abs(tx):
        return "W" if tz > 0 else "S"
    return "D" if tx > 0 else "A"


def camera_app(model: Any, *, reverse: bool = False, delay_s: float = 0.0) -> web.Application:
    async def socket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=4 * 1024**2)
        await ws.prepare(request)
        world = ChunkedWorld(model, 9, reverse=reverse, delay_s=delay_s)
        requests: asyncio.Queue[tuple[float, list[str]]] = asyncio.Queue()
        last = np.eye(4)

        async def generate() -> None:
            while not ws.closed:
                ready_at, keys = await requests.get()
                await asyncio.sleep(max(0.0, ready_at - time.monotonic()))
                start = time.monotonic()
                frames, _ = await world.generate(keys)
                for image in frames:  # one burst per chunk, then its playing time
                    await ws.send_bytes(jpeg(image))
                await asyncio.sleep(max(0.0, start + len(frames) / FPS - time.monotonic()))

        task = asyncio.create_task(generate())
        try:
            async for msg in ws:
                if msg.type != WSMsgType.BINARY:
                    continue
                body = msgpack.unpackb(msg.data)
                if body.get("type") != "camera":
                    continue
                keys = []
                for pose in body["poses"]:
                    cur = np.asarray(pose, dtype=np.float64)
                    keys.append(_key_of_motion(last, cur))
                    last = cur
                requests.put_nowait((time.monotonic() + delay_s, keys))
        finally:
            task.cancel()
        return ws

    app = web.Application()
    app.router.add_get("/v1/realtime/world/camera", socket)
    return app


def command_app(model: Any, *, reverse: bool = False, delay_s: float = 0.0) -> web.Application:
    async def socket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=1024**2)
        await ws.prepare(request)
        world = ChunkedWorld(model, 8, reverse=reverse, delay_s=delay_s)
        queue: asyncio.Queue[Any] = asyncio.Queue()

        async def generate() -> None:
            while not ws.closed:
                while queue.qsize() > 4:
                    await asyncio.sleep(0.01)
                frames, gen_ms = await world.generate(world.held_now())
                for image in frames:
                    data = base64.b64encode(jpeg(image)).decode()
                    queue.put_nowait(json.dumps({"event": "frame", "data": data}))
                queue.put_nowait(json.dumps({"event": "chunk", "n": 8, "gen_ms": gen_ms}))

        tasks = [asyncio.create_task(generate()), asyncio.create_task(_paced(ws, queue, FPS))]
        try:
            async for msg in ws:
                body = json.loads(msg.data)
                if body.get("cmd") == "move" and body.get("dir") in COMMAND_DIRS:
                    world.hold(COMMAND_DIRS[body["dir"]] if body.get("on") else None)
        finally:
            for task in tasks:
                task.cancel()
        return ws

    app = web.Application()
    app.router.add_get("/play", socket)
    return app


async def start(app: web.Application) -> tuple[web.AppRunner, int]:
    return await _start(app)

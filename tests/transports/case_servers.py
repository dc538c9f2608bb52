"""Servers that start from a case's image, written from public descriptions with plain aiohttp
and OpenCV, and no streameval code.

- ``worldfoundry_case_app``: WorldFoundry Studio's realtime service as its public source
  describes it (``worldfoundry/studio/visualization/backends/world_realtime.py``): ``POST
  /api/session/input`` takes a multipart field ``file``, stores it and answers ``{"path",
  "url"}``; ``GET /api/realtime/ws`` reads a first message ``{"type": "configure", "session":
  {"prompt", "init_image_path", ...}}``, answers ``configuring``, opens the image at
  ``session.init_image_path`` and answers ``ready``; its queued backends refuse a session
  without an image: ``{"type": "error", "message": "ValueError: Queued segment setup is
  missing: initial image."}``, then close (1011, "realtime session failed"). Actions
  ``{"type": "action", "action": {"event": "keydown"|"keyup", "key": k}}``; binary JPEG frames
  at 16 fps, 9 a chunk, each chunk followed by ``chunk_done``. ``mount`` makes it a server on
  another machine: it reads ``REMOTE/...`` paths from a local folder.
- ``inline_case_app``: a server that takes the image inline, as other public servers do (an
  ``input_image_base64`` field in a start message): ``{"type": "start", "input_image_base64",
  "prompt", ...}`` → ``{"event": "started"}``; keys ``{"cmd": "move", "dir": d, "on": bool}``;
  frames as base64 JPEG in ``{"event": "frame", "data": ...}``. ``ignore_image`` makes it a
  server that starts from a scene of its own whatever it is sent.

Every server starts from the image (decoded, its centre crop at the output's aspect) and moves
over it with the keys: A/D and L/R shift the view, W/S zoom in and out, chunk by chunk under
the key held at the chunk's start. ``received`` records what each session was sent.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from aiohttp import WSMsgType, web

FPS = 16.0
CHUNK = 9
OUT_W, OUT_H = 128, 96
WF_KEYS = {"w": "W", "s": "S", "a": "A", "d": "D", "j": "L", "l": "R"}
MOVE_DIRS = {"forward": "W", "back": "S", "left": "A", "right": "D", "turn_left": "L",
             "turn_right": "R"}  # fmt: skip
SHIFT_PX = {"A": -2.0, "D": 2.0, "L": -3.0, "R": 3.0}  # the view's move per frame, image pixels
ZOOM = {"W": 0.985, "S": 1.015}  # the view's size per frame


@dataclass
class Received:
    """What one session was sent: the start message's fields and the image it read."""

    prompt: str | None = None
    image_path: str | None = None
    image_sha256: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)
    t_start: float = field(default_factory=time.monotonic)
    t_end: float | None = None


class View:
    """A window over the start image: its centre crop at the output's aspect, moved by keys."""

    def __init__(self, image: np.ndarray) -> None:
        self.image = image
        h, w = image.shape[:2]
        self.cx, self.cy = (w - 1) / 2, (h - 1) / 2
        self.crop_w = min(w, h * OUT_W / OUT_H)
        self.scale = 1.0

    def step(self, key: str) -> np.ndarray:
        self.cx += SHIFT_PX.get(key, 0.0)
        self.scale = float(np.clip(self.scale * ZOOM.get(key, 1.0), 0.5, 1.6))
        return self.frame()

    def frame(self) -> np.ndarray:
        s = OUT_W / (self.crop_w * self.scale)  # output pixels per image pixel
        m = np.array([[s, 0, OUT_W / 2 - 0.5 - s * self.cx],
                      [0, s, OUT_H / 2 - 0.5 - s * self.cy]])  # fmt: skip
        return cv2.warpAffine(self.image, m, (OUT_W, OUT_H), flags=cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_REFLECT)  # fmt: skip


def _jpeg(rgb: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [1, 92])
    assert ok
    return bytes(buf)


def _decode(data: bytes) -> np.ndarray | None:
    bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    return None if bgr is None else cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def own_scene() -> np.ndarray:
    """What a server that ignores the image shows: stripes of its own."""
    x = np.arange(320)[None, :, None]
    y = np.arange(240)[:, None, None]
    return ((np.sin(x / 7.0) + np.cos(y / 11.0)) * 60 + 128 + 0 * np.arange(3)).astype(np.uint8)


async def _play(view: View, held: dict[str, str], send: Any, closed: Any,
                chunk_done: Any = None) -> None:  # fmt: skip
    """Chunks of ``CHUNK`` frames under the key held at each chunk's start, paced at ``FPS``;
    the first chunk waits for the first key."""
    while "key" not in held and not closed():
        await asyncio.sleep(0.01)
    next_at = time.monotonic()
    while not closed():
        key = held["key"]
        started = time.perf_counter()
        frames = [view.step(key) for _ in range(CHUNK)]
        gen_ms = 1000 * (time.perf_counter() - started)
        for image in frames:
            next_at = max(next_at + 1 / FPS, time.monotonic())
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            if closed():
                return
            await send(image)
        if chunk_done is not None:
            await chunk_done(len(frames), gen_ms)


def worldfoundry_case_app(
    uploads: Path,
    received: list[Received],
    *,
    mount: tuple[str, Path] | None = None,
    refuse: str | None = None,
    upload_limit: int | None = None,
) -> web.Application:
    """``refuse``: a session whose prompt holds this text is refused with an error naming it;
    ``upload_limit``: a larger upload is answered 413."""
    uploads.mkdir(parents=True, exist_ok=True)

    async def upload_input(request: web.Request) -> web.Response:
        size = request.content_length or 0
        if upload_limit is not None and size > upload_limit:
            raise web.HTTPRequestEntityTooLarge(max_size=upload_limit, actual_size=size)
        reader = await request.multipart()
        part = await reader.next()
        if part is None or getattr(part, "name", None) != "file":
            raise web.HTTPBadRequest(reason="Expected multipart field named 'file'.")
        suffix = Path(part.filename or "input.bin").suffix[:16]  # type: ignore[union-attr]
        target = uploads / f"{uuid.uuid4().hex}{suffix}"
        target.write_bytes(bytes(await part.read()))  # type: ignore[union-attr]
        return web.json_response({"path": str(target), "url": f"/api/file?path={target}"})

    def local(path: str) -> Path:
        if mount is not None and path.startswith(mount[0].rstrip("/") + "/"):
            return mount[1] / path[len(mount[0].rstrip("/")) + 1 :]
        return Path(path)

    async def fail(ws: web.WebSocketResponse, message: str) -> web.WebSocketResponse:
        await ws.send_str(json.dumps({"type": "error", "message": message}))
        await ws.close(code=1011, message=b"realtime session failed")
        return ws

    async def socket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=1024**2)
        await ws.prepare(request)
        first = await ws.receive()
        body = json.loads(first.data) if first.type == WSMsgType.TEXT else {}
        if body.get("type") != "configure":
            return await fail(ws, "RuntimeError: Expected WebSocket message type='configure'.")
        session = body.get("session") if isinstance(body.get("session"), dict) else {}
        record = Received(prompt=session.get("prompt"), image_path=session.get("init_image_path"))
        record.extra = {k: v for k, v in session.items() if k not in ("prompt", "init_image_path")}
        received.append(record)
        await ws.send_str(json.dumps({"type": "configuring", "transport": "ws"}))
        missing = [label for value, label in ((str(record.prompt or "").strip(), "prompt"),
                                              (record.image_path or "", "initial image"))
                   if not value]  # fmt: skip
        if missing:
            return await fail(
                ws, "ValueError: Queued segment setup is missing: " + ", ".join(missing) + "."
            )
        if refuse is not None and refuse in str(record.prompt):
            return await fail(ws, f"ValueError: prompt refused by the safety filter: {refuse!r}")
        try:
            data = local(str(record.image_path)).read_bytes()
        except OSError as exc:
            return await fail(ws, f"FileNotFoundError: {exc}")
        image = _decode(data)
        if image is None:
            return await fail(ws, "UnidentifiedImageError: cannot identify image file")
        record.image_sha256 = hashlib.sha256(data).hexdigest()
        await ws.send_str(json.dumps({"type": "ready", "fps": FPS, "transport": "ws"}))
        held: dict[str, str] = {}

        async def send(frame: np.ndarray) -> None:
            await ws.send_bytes(_jpeg(frame))

        async def chunk_done(frames: int, gen_ms: float) -> None:
            await ws.send_str(json.dumps({"type": "chunk_done", "frames": frames,
                                          "generation_ms": round(gen_ms, 1), "queue_depth": 0,
                                          "dropped_frames": 0}))  # fmt: skip

        player = asyncio.create_task(_play(View(image), held, send, lambda: ws.closed, chunk_done))
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                action = json.loads(msg.data).get("action") or {}
                key = WF_KEYS.get(str(action.get("key")).lower())
                if key is not None:
                    held["key"] = key if action.get("event") == "keydown" else "-"
                    record.keys.append(held["key"])
        finally:
            player.cancel()
            record.t_end = time.monotonic()
        return ws

    app = web.Application(client_max_size=64 * 1024**2)
    app.router.add_post("/api/session/input", upload_input)
    app.router.add_get("/api/realtime/ws", socket)
    return app


def inline_case_app(
    received: list[Received], *, ignore_image: bool = False, connections: list[int] | None = None
) -> web.Application:
    """A ``start`` message may come again on the same connection: the server starts over from
    its image (``connections`` counts the connections opened)."""

    async def socket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=16 * 1024**2)
        await ws.prepare(request)
        if connections is not None:
            connections.append(len(connections))
        held: dict[str, str] = {}
        session: dict[str, Any] = {}

        async def send(frame: np.ndarray) -> None:
            text = base64.b64encode(_jpeg(frame)).decode()
            await ws.send_str(json.dumps({"event": "frame", "data": text}))

        async def begin(body: dict[str, Any]) -> bool:
            record = Received(prompt=body.get("prompt"))
            record.extra = {k: v for k, v in body.items()
                            if k not in ("input_image_base64", "prompt")}  # fmt: skip
            received.append(record)
            try:
                data = base64.b64decode(str(body.get("input_image_base64")), validate=True)
            except ValueError:
                data = b""
            image = _decode(data) if data else None
            if image is None:
                await ws.send_str(json.dumps({"event": "error", "reason": "no input image"}))
                await ws.close(code=1008, message=b"bad start")
                return False
            record.image_sha256 = hashlib.sha256(data).hexdigest()
            session["record"] = record
            held.clear()  # the new session waits for its first key
            await ws.send_str(json.dumps({"event": "started"}))
            view = View(own_scene() if ignore_image else image)
            session["player"] = asyncio.create_task(_play(view, held, send, lambda: ws.closed))
            return True

        async def stop() -> None:
            player = session.pop("player", None)
            if player is not None:
                player.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await player

        first = await ws.receive()
        body = json.loads(first.data) if first.type == WSMsgType.TEXT else {}
        if body.get("type") != "start" or not await begin(body):
            if not ws.closed:
                await ws.close(code=1008, message=b"expected start")
            return ws
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                body = json.loads(msg.data)
                if body.get("type") == "start":
                    await stop()
                    if not await begin(body):
                        break
                    continue
                key = MOVE_DIRS.get(str(body.get("dir")))
                if body.get("cmd") == "move" and key is not None:
                    held["key"] = key if body.get("on") else "-"
                    session["record"].keys.append(held["key"])
        finally:
            await stop()
        return ws

    app = web.Application()
    app.router.add_get("/play", socket)
    return app


INLINE_PROFILE = """
name = "inline-start"
description = "start message with the image inline as base64; base64 JSON frames"
transport = "ws"
fps = 16

[frames]
encoding = "base64"
field = "data"

[keys]
names = { W = "forward", S = "back", A = "left", D = "right", L = "turn_left", R = "turn_right" }

[conditioning]
image = "inline"

[ready]
match = { event = "started" }
timeout_s = 10

[error]
match = { event = "error" }
field = "reason"

[templates.configure]
type = "start"
input_image_base64 = "{image_base64}"
mime = "{image_mime}"
prompt = "{prompt}"
intrinsics = "{intrinsics}"
size = ["{image_width}", "{image_height}"]
case = "{case}"
seed = "{seed}"

[templates.keydown]
cmd = "move"
dir = "{key}"
on = true

[templates.keyup]
cmd = "move"
dir = "{key}"
on = false
"""
"""The inline server's profile, written here as a user would (docs/serve-formats.md)."""

PATH_PROFILE = """
name = "worldfoundry-path"
description = "WorldFoundry realtime socket reading the image at a path it can see"
transport = "ws"
fps = 16

[keys]
names = { W = "w", S = "s", A = "a", D = "d", L = "j", R = "l" }

[conditioning]
image = "path"

[ready]
match = { type = "ready" }
timeout_s = 10

[stats]
match = { type = "chunk_done" }
frames = "frames"

[error]
match = { type = "error" }

[templates.configure]
type = "configure"
session = { prompt = "{prompt}", init_image_path = "{image_path}", case = "{case}" }

[templates.keydown]
type = "action"
action = { event = "keydown", key = "{key}" }

[templates.keyup]
type = "action"
action = { event = "keyup", key = "{key}" }
"""
"""The WorldFoundry-style server with the image as a path (``--server-path`` for another
machine) instead of an upload."""


async def start_app(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


RESET_PROFILE = (
    INLINE_PROFILE.replace('image = "inline"', 'image = "inline"\nstart = "reset"')
    + """
[templates.reset]
type = "start"
input_image_base64 = "{image_base64}"
prompt = "{prompt}"
case = "{case}"
again = true
"""
)
"""The inline server kept open across cases: each case after the first is a ``reset``."""

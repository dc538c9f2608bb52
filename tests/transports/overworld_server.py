"""Overworld / Wayfarer Labs' world engine as its public code behaves, written with plain
aiohttp and OpenCV and no streameval code; only the model is a stand-in handed in by the test
(any object with ``reset(image=None)`` and ``step(key) -> frame``), turned by the mouse.

Read from (docs/serve-formats.md#overworld): the over.world client and its README
(emranemran/overworld-hackathon @ ``80c7e97``: ``README.md`` "Connection Flow", "Router
Endpoints", "WebSocket Protocol", ``hackathon-client.html``) and the engine's own servers
(Overworldai/world_engine: ``examples/websocket_server.py`` @ ``0a92477``, ``server.py`` @
``4e0c989``). What it keeps:

- **The router** (its own port): ``GET /claim?key=PASSPHRASE`` answers ``{"success": true,
  "gpu", "port", "session_id", "expires_in", "ws_url": "/ws"}``, or ``{"success": false,
  "error": "invalid_key" | "no_gpu_available"}`` (every slot claimed: a slot is held until
  released or expired, not when its socket closes — the public client releases on close
  itself); ``GET /heartbeat?session_id=`` answers ``{"success": true, "remaining"}`` or
  ``"session_not_found"``; ``POST /release {"session_id"}`` frees the slot; ``GET
  /status?key=`` the free slots.
- **The engine** (the claim's port): ``/ws?session_id=``, an unknown session closed at once
  (1008). ``status`` messages while it resets to its seed (``initializing...``, ``loading
  frame...``, ``connected``); then each ``control`` message (``buttons``, ``mouse_dx``,
  ``mouse_dy``) makes **one** frame (``gen_frame``), answered as ``{"type": "frame", "data":
  <base64 JPEG>, "frame_id", "gen_ms"}``; ``prompt`` is kept; ``seed_image`` (base64 PNG or
  JPEG only, else ``{"type": "error", "message": "Invalid image format"}``) replaces the
  seed; ``reset`` goes back to the seed (``status: reset``); ``pause`` / ``resume``.
- **Time-outs**: the session lasts ``expires_in`` from the claim, with a ``timeout_warning``
  (``remaining``) ``warn_before_s`` before, then ``session_expired``, the socket closed and
  the slot freed; a session with no control, prompt or image for ``idle_s`` is closed and
  freed (the README's idle timer; the close reason ``idle timeout`` is ours, the public code
  does not say its words).
- **Buttons**: ``W A S D`` move; ``R`` is the engine's action button, not a turn; unknown
  buttons are dropped (its ``BUTTON_CODES``). The camera turns only by the mouse: the
  stand-in turns one step (``L``/``R`` of the model) for every ``counts_per_turn`` of
  ``mouse_dx`` accumulated, so a turn is as fast as the mouse moves.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np
from aiohttp import WSMsgType, web

MOVES = ("W", "S", "A", "D")
BUTTONS = frozenset({"W", "A", "S", "D", "R", "SPACE", "SHIFT", "MOUSE_LEFT", "MOUSE_RIGHT",
                     "MOUSE_MIDDLE"})  # fmt: skip


def _jpeg(rgb: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [1, 90])
    assert ok
    return bytes(buf)


@dataclass
class Slot:
    session_id: str
    claimed_at: float
    last_input: float
    prompt: str = ""
    seed: np.ndarray | None = None
    frames: int = 0
    warned: bool = False


@dataclass
class Overworld:
    """How the server runs, and what it saw (the tests read these)."""

    model: Callable[[], Any]
    passphrase: str = "open-sesame"
    slots: int = 1
    expires_in: float = 900.0
    warn_before_s: float = 60.0
    idle_s: float = 300.0
    counts_per_turn: float = 8.0
    invert_mouse: bool = False  # a game's "invert mouse" setting: +dx turns left (the probe's)
    worker_port: int = 0
    claimed: dict[str, Slot] = field(default_factory=dict)
    claims: list[dict[str, Any]] = field(default_factory=list)  # every answer to /claim
    releases: list[str] = field(default_factory=list)
    heartbeats: int = 0
    controls: list[dict[str, Any]] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)  # every message type the engine got
    closed: list[str] = field(default_factory=list)  # why each socket closed

    def expired(self, slot: Slot) -> bool:
        return time.monotonic() - slot.claimed_at >= self.expires_in

    def free(self, session_id: str) -> None:
        self.claimed.pop(session_id, None)


def router_app(world: Overworld) -> web.Application:
    async def claim(request: web.Request) -> web.Response:
        if request.query.get("key") != world.passphrase:
            answer: dict[str, Any] = {"success": False, "error": "invalid_key"}
        elif len(world.claimed) >= world.slots:
            answer = {"success": False, "error": "no_gpu_available"}
        else:
            sid = uuid.uuid4().hex
            now = time.monotonic()
            world.claimed[sid] = Slot(sid, now, now)
            answer = {
                "success": True,
                "gpu": len(world.claimed) - 1,
                "port": world.worker_port,
                "session_id": sid,
                "expires_in": world.expires_in,
                "ws_url": "/ws",
            }
        world.claims.append(answer)
        return web.json_response(answer)

    async def heartbeat(request: web.Request) -> web.Response:
        slot = world.claimed.get(request.query.get("session_id", ""))
        if slot is None or world.expired(slot):
            return web.json_response({"success": False, "error": "session_not_found"})
        world.heartbeats += 1
        remaining = world.expires_in - (time.monotonic() - slot.claimed_at)
        return web.json_response({"success": True, "remaining": int(remaining)})

    async def release(request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            body = {}
        sid = str(body.get("session_id", "")) if isinstance(body, dict) else ""
        if sid not in world.claimed:
            return web.json_response({"success": False, "error": "session_not_found"})
        world.free(sid)
        world.releases.append(sid)
        return web.json_response({"success": True})

    async def status(request: web.Request) -> web.Response:
        if request.query.get("key") != world.passphrase:
            return web.json_response({"success": False, "error": "invalid_key"})
        free = world.slots - len(world.claimed)
        return web.json_response({"success": True, "available": free, "total": world.slots})

    app = web.Application()
    app.router.add_get("/claim", claim)
    app.router.add_get("/heartbeat", heartbeat)
    app.router.add_post("/release", release)
    app.router.add_get("/status", status)
    return app


class Engine:
    """The stand-in model behind one socket: buttons move it, the mouse turns it."""

    def __init__(self, model: Any, counts_per_turn: float, invert: bool = False) -> None:
        self.model = model
        self.counts_per_turn = counts_per_turn
        self.sign = -1.0 if invert else 1.0
        self.budget = 0.0

    def reset(self, seed: np.ndarray | None) -> None:
        self.budget = 0.0
        self.model.reset(image=seed)

    def gen_frame(self, buttons: set[str], mouse_dx: float) -> np.ndarray:
        self.budget += self.sign * mouse_dx
        key = next((b for b in MOVES if b in buttons), "-")
        if self.budget <= -self.counts_per_turn:
            key, self.budget = "L", self.budget + self.counts_per_turn
        elif self.budget >= self.counts_per_turn:
            key, self.budget = "R", self.budget - self.counts_per_turn
        out = self.model.step(key)
        return np.asarray(getattr(out, "image", out), dtype=np.uint8)


def _seed(data: Any) -> np.ndarray | None:
    """A seed image: base64 of a PNG or JPEG only (the README: other formats are rejected)."""
    if not isinstance(data, str):
        return None
    try:
        raw = base64.b64decode(data.split(",", 1)[-1], validate=True)
    except (binascii.Error, ValueError):
        return None
    if not (raw.startswith(b"\xff\xd8") or raw.startswith(b"\x89PNG")):
        return None
    bgr = cv2.imdecode(np.frombuffer(raw, np.uint8), cv2.IMREAD_COLOR)
    return None if bgr is None else cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def engine_app(world: Overworld) -> web.Application:
    async def ws(request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse(max_msg_size=16 * 1024 * 1024)
        await socket.prepare(request)
        slot = world.claimed.get(request.query.get("session_id", ""))
        if slot is None:
            world.closed.append("invalid session")
            await socket.close(code=1008, message=b"invalid session")
            return socket
        engine = Engine(world.model(), world.counts_per_turn, world.invert_mouse)

        async def send(body: dict[str, Any]) -> None:
            await socket.send_str(json.dumps(body))

        await send({"type": "status", "message": "initializing..."})
        await asyncio.to_thread(engine.reset, slot.seed)
        await send({"type": "status", "message": "loading frame..."})
        await send({"type": "status", "message": "connected"})
        paused = False
        why = "client closed"
        while True:
            now = time.monotonic()
            remaining = world.expires_in - (now - slot.claimed_at)
            if remaining <= 0:
                await send({"type": "session_expired"})
                world.free(slot.session_id)
                why = "session expired"
                await socket.close(code=1000, message=b"session expired")
                break
            if remaining <= world.warn_before_s and not slot.warned:
                slot.warned = True
                await send({"type": "timeout_warning", "remaining": int(remaining)})
            if now - slot.last_input >= world.idle_s:
                world.free(slot.session_id)
                why = "idle timeout"
                await socket.close(code=1000, message=b"idle timeout")
                break
            try:
                msg = await socket.receive(timeout=0.05)
            except TimeoutError:
                continue
            if msg.type != WSMsgType.TEXT:
                break
            try:
                body = json.loads(msg.data)
            except ValueError:
                continue
            kind = body.get("type", "control") if isinstance(body, dict) else None
            world.seen.append(str(kind))
            if kind in ("control", "prompt", "seed_image"):
                slot.last_input = time.monotonic()
            if kind == "reset":
                await asyncio.to_thread(engine.reset, slot.seed)
                slot.frames = 0
                await send({"type": "status", "message": "reset"})
            elif kind == "prompt":
                slot.prompt = str(body.get("prompt", ""))
            elif kind == "seed_image":
                seed = _seed(body.get("data"))
                if seed is None:
                    await send({"type": "error", "message": "Invalid image format"})
                else:
                    slot.seed = seed
            elif kind in ("pause", "resume"):
                paused = kind == "pause"
            elif kind == "control" and not paused:
                world.controls.append(body)
                buttons = {str(b).upper() for b in body.get("buttons", [])} & BUTTONS
                started = time.perf_counter()
                image = await asyncio.to_thread(
                    engine.gen_frame, buttons, float(body.get("mouse_dx", 0.0))
                )
                gen_ms = 1000 * (time.perf_counter() - started)
                slot.frames += 1
                await send({"type": "frame", "data": base64.b64encode(_jpeg(image)).decode(),
                            "frame_id": slot.frames, "gen_ms": gen_ms})  # fmt: skip
        world.closed.append(why)
        return socket

    app = web.Application()
    app.router.add_get("/ws", ws)
    return app

"""WorldFoundry Studio's realtime WebSocket as its public code behaves (OpenEnvision/WorldFoundry
at bc062d7, ``worldfoundry/studio/visualization/backends/world_realtime.py`` ``serve_socket``,
``_socket_generation_worker``, ``_socket_sender``, ``RealtimeControlResampler``, and
``worldfoundry/studio/execution.py``'s realtime configure/stream), written with plain aiohttp
and OpenCV and no streameval code; only the model is a small key-obeying stand-in (``View``
from ``case_servers``: a window over the start image, moved by the keys).

What it keeps of the real server:

- ``POST /api/session/input`` (multipart field ``file``) stores the image and answers
  ``{"path", "url"}``.
- ``GET /api/realtime/ws``: the first message must be ``{"type": "configure", "session":
  {...}}``; the prompt falls back to the model's default. It answers ``configuring``, prepares
  the model from ``session.init_image_path`` and answers ``ready`` with the model's ``fps``.
  Without an image the model is never configured: ``ready`` still comes, and the first chunk
  fails with ``{"type": "error", "message": "RuntimeError: <model> realtime stream has not
  been configured."}``, then the socket closes (execution.py's ``stream`` action).
- Silent at rest: a chunk is generated only while a key is held (the generation worker
  skips a chunk without interactions and waits for the next action); the keys are w a s d,
  j l (turn), i k, with the arrow aliases; unknown keys are ignored without a word. The
  effective key of an axis is the last one pressed.
- Chunks of ``first_chunk`` frames, then ``chunk`` (Matrix-Game 3.0: 57, then 40 at 17 fps),
  each encoded to JPEG, queued, and announced at once in ``chunk_done`` (``frames``,
  ``generation_ms``, ``control_latency_ms``, ``queue_depth``, ``dropped_frames``); the sender
  paces the queue at ``fps`` (its deadline catches up after a gap longer than one frame).

``one_session`` makes it hold one session at a time, as the Studio does (``RealtimePeerManager``
refuses a second with ``{"type": "error", "message": "RuntimeError: A realtime world session is
already active."}`` after ``configuring``, then closes 1011), and a closed session holds the
server ``drain_s`` longer (the Studio's ``close_active`` waits for the chunk its one model
thread is generating; a fixed time here, so that a test knows the next session comes too
early); ``refused`` counts those answers. ``refuse_unknown`` makes it answer a key name it
does not know with ``{"type": "error", "message": "ValueError: unsupported control key
'<name>'"}`` instead of ignoring it (as servers that validate their input do);
``before_ready`` makes it send that many frames of the start image before ``ready`` (a server
that starts playing while it prepares); ``pace_fps`` paces at another rate than it announces.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

from tests.transports.case_servers import View, _decode, _jpeg

ALIASES = {"arrowup": "i", "arrowdown": "k", "arrowleft": "j", "arrowright": "l"}
SUPPORTED = frozenset("wasdijkl")
MOVE = {"w": "W", "s": "S", "a": "A", "d": "D", "j": "L", "l": "R"}
MOTION = {"w": (1.0, 0.0, 0.0), "s": (-1.0, 0.0, 0.0), "a": (0.0, -1.0, 0.0),
          "d": (0.0, 1.0, 0.0), "j": (0.0, 0.0, -1.0), "l": (0.0, 0.0, 1.0)}  # fmt: skip
AXES = (("w", "s"), ("a", "d"), ("i", "k"), ("j", "l"))


@dataclass
class Studio:
    """How the server runs: the model's fps and chunk cadence, and what it was sent."""

    fps: float = 17.0
    first_chunk: int = 57
    chunk: int = 40
    model: str = "Matrix-Game-3.0"
    before_ready: int = 0
    pace_fps: float | None = None
    gen_s_per_frame: float = 0.0
    # a stand-in with real turns and strafes (the probe's tests hand in ``EasedWorld.render``:
    # (forward, right, yaw) shares of full speed → the next frame); None: the start image's View
    render: Callable[[tuple[float, float, float]], Any] | None = None
    refuse_unknown: bool = False
    one_session: bool = False
    drain_s: float = 0.0
    sessions: list[dict[str, Any]] = field(default_factory=list)
    refused: int = 0
    open_sessions: int = 0
    busy_until: float = 0.0


class _Keys:
    """Pressed keys, last pressed wins per axis (``RealtimeControlState``)."""

    def __init__(self) -> None:
        self.order: dict[str, int] = {}
        self.n = 0

    def apply(self, event: str, key: str) -> bool:
        key = ALIASES.get(key.strip().lower(), key.strip().lower())
        if key not in SUPPORTED or event not in ("keydown", "keyup"):
            return False
        if event == "keydown":
            self.n += 1
            self.order[key] = self.n
        else:
            self.order.pop(key, None)
        return True

    def effective(self) -> list[str]:
        out = []
        for axis in AXES:
            held = [k for k in axis if k in self.order]
            if held:
                out.append(max(held, key=lambda k: self.order[k]))
        return out


def studio_app(uploads: Path, studio: Studio) -> web.Application:
    uploads.mkdir(parents=True, exist_ok=True)

    async def upload_input(request: web.Request) -> web.Response:
        reader = await request.multipart()
        part = await reader.next()
        if part is None or getattr(part, "name", None) != "file":
            raise web.HTTPBadRequest(reason="Expected multipart field named 'file'.")
        target = uploads / f"{uuid.uuid4().hex}{Path(part.filename or 'x.bin').suffix[:16]}"  # type: ignore[union-attr]
        target.write_bytes(bytes(await part.read()))  # type: ignore[union-attr]
        return web.json_response({"path": str(target), "url": f"/api/file?path={target}"})

    async def socket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=1024**2)
        await ws.prepare(request)
        first = await ws.receive()
        body = json.loads(first.data) if first.type == WSMsgType.TEXT else {}
        if str(body.get("type") or "").lower() != "configure":
            await ws.close(code=1011, message=b"Expected WebSocket message type='configure'.")
            return ws
        session = body.get("session") if isinstance(body.get("session"), dict) else {}
        record: dict[str, Any] = {"session": session, "keys": [], "frames": 0}
        studio.sessions.append(record)
        await ws.send_str(json.dumps({"type": "configuring", "transport": "ws"}))
        if studio.one_session and (studio.open_sessions or time.monotonic() < studio.busy_until):
            studio.refused += 1
            said = "RuntimeError: A realtime world session is already active."
            await ws.send_str(json.dumps({"type": "error", "message": said}))
            await ws.close(code=1011, message=b"realtime session failed")
            return ws
        studio.open_sessions += 1
        view = None
        path = str(session.get("init_image_path") or "")
        if path:
            image = _decode(Path(path).read_bytes())
            view = None if image is None else View(image)
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        keys = _Keys()
        wake = asyncio.Event()
        state = {"dropped": 0, "arrivals": [], "chunks": 0}
        lock = asyncio.Lock()

        async def send_json(payload: dict[str, Any]) -> None:
            async with lock:
                if not ws.closed:
                    await ws.send_str(json.dumps(payload, separators=(",", ":")))

        async def sender() -> None:
            period = 1.0 / (studio.pace_fps or studio.fps)
            deadline: float | None = None
            while not ws.closed:
                packet = await queue.get()
                now = time.monotonic()
                if deadline is not None:
                    deadline += period
                    if deadline > now:
                        await asyncio.sleep(deadline - now)
                    elif now - deadline > period:
                        deadline = now
                else:
                    deadline = now
                async with lock:
                    if ws.closed:
                        return
                    await ws.send_bytes(packet)
                record["frames"] += 1

        async def generator() -> None:
            while not ws.closed:
                await wake.wait()
                held = keys.effective()
                if not held:  # silent at rest
                    wake.clear()
                    continue
                if view is None:
                    await send_json({"type": "error", "message": f"RuntimeError: {studio.model} "
                                     "realtime stream has not been configured."})  # fmt: skip
                    await ws.close(code=1011, message=b"realtime session failed")
                    return
                n = studio.first_chunk if state["chunks"] == 0 else studio.chunk
                arrival = state["arrivals"][0] if state["arrivals"] else None
                started = time.monotonic()
                if studio.render is not None:
                    motion = MOTION.get(held[-1], (0.0, 0.0, 0.0))
                    frames = [studio.render(motion) for _ in range(n)]
                else:
                    frames = [view.step(MOVE.get(held[-1], "-")) for _ in range(n)]
                await asyncio.sleep(studio.gen_s_per_frame * n)
                gen_ms = 1000 * (time.monotonic() - started)
                for image in frames:
                    queue.put_nowait(_jpeg(image))
                state["chunks"] += 1
                state["arrivals"] = [t for t in state["arrivals"] if t > started]
                latency = None if arrival is None else round(1000 * (time.monotonic() - arrival), 1)
                await send_json({"type": "chunk_done", "chunk_index": state["chunks"], "frames": n,
                                 "generation_ms": round(gen_ms, 1), "control_latency_ms": latency,
                                 "queue_depth": queue.qsize(),
                                 "dropped_frames": state["dropped"]})  # fmt: skip
                # the next chunk is generated while this one plays: wait until it is mostly out
                while queue.qsize() > n // 4 and not ws.closed:
                    await asyncio.sleep(0.01)

        tasks = [asyncio.create_task(sender()), asyncio.create_task(generator())]
        if studio.before_ready and view is not None:
            for _ in range(studio.before_ready):
                queue.put_nowait(_jpeg(view.frame()))
            while record["frames"] < studio.before_ready and not ws.closed:
                await asyncio.sleep(0.01)
        await send_json({"type": "ready", "fps": studio.fps, "transport": "ws"})
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                payload = json.loads(msg.data)
                if payload.get("type") != "action":
                    continue
                action = payload.get("action") or {}
                name = str(action.get("key") or "")
                if (
                    studio.refuse_unknown
                    and ALIASES.get(name.lower(), name.lower()) not in SUPPORTED
                ):
                    said = f"ValueError: unsupported control key {name!r}"
                    await send_json({"type": "error", "message": said})
                    continue
                if keys.apply(str(action.get("event") or ""), name):
                    record["keys"].append((action.get("event"), action.get("key")))
                    state["arrivals"].append(time.monotonic())
                    wake.set()
        finally:
            for task in tasks:
                task.cancel()
            studio.open_sessions -= 1
            studio.busy_until = time.monotonic() + studio.drain_s
        return ws

    app = web.Application(client_max_size=64 * 1024**2)
    app.router.add_post("/api/session/input", upload_input)
    app.router.add_get("/api/realtime/ws", socket)
    return app

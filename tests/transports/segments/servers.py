"""Request-response world-model servers written from public descriptions, with plain aiohttp
and no streameval code (the world model is handed in: anything with ``step(key).image``).

- ``/api/generate_long``: Yume's web app (stdstu12/YUME ``webapp_single_gpu.py``): a POSTed
  JSON body (``prompt``, ``mode``, ``jpg_path``, ``fps``, ``frame_zero``, ``sample_num``,
  ``continue_from_last``, ``camera_movement1`` W/A/S/D/None, ``camera_movement2`` ←/→/·)
  generates ``4 * ((frame_zero - 1) // 4) + 1`` new frames (the VAE decode of the chunk's
  latent frames) under the camera fields, writes ``outputs/<n>_long.mp4`` at ``fps`` — after
  its context frames when it continues — and answers ``{"success": true, "video_abs",
  "video_rel": "/outputs/<n>_long.mp4", "info", "prompt"}``, or ``{"success": false,
  "error": ...}`` (HTTP 200 both); ``GET /outputs/<name>`` serves the files.
- ``/generate``: a plain style: ``{"action": "w", "frames": N}`` answers the N frames' mp4
  as the body (``video/mp4``).

``reverse`` turns every key the opposite way. ``fault``: ``not-video`` (the file is text),
``missing`` (names a file never written), ``empty`` (an mp4 with no frame), ``http-500``,
``error`` (``success: false``), ``not-json`` (an HTML page), ``never`` (no answer at all),
from request ``fault_from`` on (0: the first);
``server_dir`` makes ``video_abs`` a server-side path (``/srv/yume/outputs/…``) that only a
path map can find.
"""

from __future__ import annotations

import asyncio
import io
import itertools
from pathlib import Path
from typing import Any

import av
import numpy as np
from aiohttp import web

MOVES = {"W": "W", "S": "S", "A": "A", "D": "D"}
TURNS = {"←": "L", "→": "R"}
OPPOSITE = {"W": "S", "S": "W", "A": "D", "D": "A", "L": "R", "R": "L", "-": "-"}
CONTEXT_FRAMES = 16


def empty_video() -> bytes:
    """A video stream with no frame in it (an AVI keeps the stream where an mp4 drops it)."""
    out = io.BytesIO()
    container = av.open(out, "w", format="avi")
    stream = container.add_stream("mpeg4", rate=16)
    stream.width, stream.height, stream.pix_fmt = 64, 64, "yuv420p"
    container.start_encoding()
    container.close()
    return out.getvalue()


def mp4(frames: list[np.ndarray], fps: int) -> bytes:
    """The frames as an H.264 mp4."""
    out = io.BytesIO()
    container = av.open(out, "w", format="mp4")
    stream = container.add_stream("libx264", rate=fps)
    height, width = frames[0].shape[:2]
    stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
    stream.options = {"preset": "ultrafast", "crf": "16"}
    for image in frames:
        for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
            container.mux(packet)
    for packet in stream.encode():
        container.mux(packet)
    container.close()
    return out.getvalue()


class _Model:
    """The world behind a lock, rendered off the event loop; the last frames kept as context."""

    def __init__(self, model: Any, reverse: bool) -> None:
        self.model = model
        self.reverse = reverse
        self.lock = asyncio.Lock()
        self.context: list[np.ndarray] = []

    def _render(self, key: str, n: int) -> list[np.ndarray]:
        key = OPPOSITE[key] if self.reverse else key
        return [np.ascontiguousarray(self.model.step(key).image) for _ in range(n)]

    async def render(self, key: str, n: int) -> list[np.ndarray]:
        async with self.lock:
            return await asyncio.to_thread(self._render, key, n)


def segment_app(
    model: Any,
    outputs: Path,
    *,
    reverse: bool = False,
    fault: str | None = None,
    fault_from: int = 0,
    server_dir: str | None = None,
) -> web.Application:
    fault_at = fault
    world = _Model(model, reverse)
    outputs.mkdir(parents=True, exist_ok=True)
    names = itertools.count()
    requests = itertools.count()

    async def generate_long(request: web.Request) -> web.Response:
        data = await request.json()
        fault = fault_at if next(requests) >= fault_from else None
        if fault == "never":
            await asyncio.sleep(3600)
        if fault == "http-500":
            return web.Response(status=500, text="Internal Server Error\n<p>worker died</p>")
        if fault == "not-json":
            page = "<!doctype html>\n<title>Yume</title>"
            return web.Response(text=page, content_type="text/html")
        if fault == "error":
            return web.json_response(
                {"success": False, "error": "RuntimeError: Wan is not loaded", "trace": "..."}
            )
        cont = bool(data.get("continue_from_last"))
        if data.get("mode", "I2V") == "I2V" and not cont and not data.get("jpg_path"):
            return web.json_response(
                {"success": False, "error": "ValueError: the first round needs jpg_path"}
            )
        move = MOVES.get(str(data.get("camera_movement1")))
        turn = TURNS.get(str(data.get("camera_movement2")))
        key = move or turn or "-"
        frame_zero = int(data.get("frame_zero") or 32)
        new = await world.render(key, 4 * ((frame_zero - 1) // 4) + 1)
        frames = (world.context if cont else []) + new
        world.context = frames[-CONTEXT_FRAMES:]
        name = f"{next(names)}_long.mp4"
        path = outputs / name
        if fault == "not-video":
            path.write_text("this is not a video\n")
        elif fault == "empty":
            path.write_bytes(empty_video())
        elif fault != "missing":
            path.write_bytes(mp4(frames, int(data.get("fps") or 16)))
        where = f"{server_dir}/{name}" if server_dir else str(path.resolve())
        return web.json_response(
            {
                "success": True,
                "video_abs": where,
                "video_rel": f"/outputs/{name}",
                "info": f"Saved to {where}",
                "prompt": data.get("prompt", ""),
            }
        )

    async def generate(request: web.Request) -> web.Response:
        data = await request.json()
        key = {"w": "W", "s": "S", "a": "A", "d": "D", "left": "L", "right": "R"}[data["action"]]
        frames = await world.render(key, int(data["frames"]))
        return web.Response(body=mp4(frames, 16), content_type="video/mp4")

    async def output(request: web.Request) -> web.StreamResponse:
        path = outputs / request.match_info["name"]
        if not path.is_file():
            raise web.HTTPNotFound(text=f"no such file: {path.name}")
        return web.FileResponse(path)

    app = web.Application()
    app.router.add_post("/api/generate_long", generate_long)
    app.router.add_post("/generate", generate)
    app.router.add_get("/outputs/{name}", output)
    return app

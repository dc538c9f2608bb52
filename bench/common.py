"""Shared pieces of the benchmark scripts: synthetic rollouts from the procedural world."""

from __future__ import annotations

import os
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from streameval.protocol.schedule import Schedule
from streameval.replay.recorder import Recorder
from streameval.worlds.procedural_world import ProceduralWorld, WorldConfig

from streameval.core.events import FrameEvent

KEYS_120S = ["W", "A", "L", "R", "D", "S"]  # 20 s each: every family, five switches


def write_rollout(directory: Path, keys: list[str], seconds_per_key: float = 20.0) -> Path:
    """Render the clean procedural world and save it like a model's delivery, through the
    project's own recorder in its lossy mode (x264 CRF 18, yuv420p, as ``--record lossy``):
    ``video.mp4``, ``actions.jsonl`` and ``meta.json``; no depth or pose sidecars (most real
    rollouts have none), so the depth-free motion-type path runs."""
    world = ProceduralWorld(WorldConfig())
    schedule = Schedule.per_key(keys, seconds_per_key, world.fps)
    recorder = Recorder(
        directory, world.fps, "procedural-world[clean]", "bench", episode=directory.name, lossy=True
    )
    complete = False
    try:
        for i, key in enumerate(schedule.frame_keys()):
            recorder.add_frame(FrameEvent(i, world.step(key).image, key, i / world.fps))
        complete = True
    finally:
        recorder.close(complete)
    return directory


def _descendant_cpu_seconds(exclude: Collection[int]) -> float:
    """CPU seconds (user + system) of this process's live descendants, from /proc, leaving
    out ``exclude`` and their own descendants (a bench's model servers)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue  # gone meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)
        times[pid] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        if pid in exclude:
            continue
        total += times.get(pid, 0.0)
        todo.extend(children.get(pid, []))
    return total


def process_cpu_seconds(exclude: Collection[int] = ()) -> float:
    """CPU seconds of this process, of its children already reaped and of its live
    descendants (a TransNetV2 worker, which its pool keeps between episodes): a difference of
    two readings is what an evaluator run cost the machine, every process of it included."""
    reaped = os.times()
    return (
        time.process_time()
        + reaped.children_user
        + reaped.children_system
        + _descendant_cpu_seconds(exclude)
    )


async def serve_websocket(handler: Any) -> tuple[Any, int]:
    """An aiohttp app answering ``GET /ws`` with ``handler`` on a free loopback port: its
    runner (``await runner.cleanup()`` to stop it) and the port. The benches' model
    servers."""
    from aiohttp import web

    app = web.Application()
    app.router.add_get("/ws", handler)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

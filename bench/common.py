"""Shared pieces of the benchmark scripts: synthetic rollouts from the procedural world."""

from __future__ import annotations

from pathlib import Path

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

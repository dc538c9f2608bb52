"""Shared pieces of the benchmark scripts: synthetic rollouts from the procedural world."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import av
from streameval.protocol.schedule import Schedule
from streameval.worlds.procedural_world import ProceduralWorld, WorldConfig

KEYS_120S = ["W", "A", "L", "R", "D", "S"]  # 20 s each: every family, five switches


def write_rollout(directory: Path, keys: list[str], seconds_per_key: float = 20.0) -> Path:
    """Render the clean procedural world and save it like a model's delivery: a lossy x264
    ``video.mp4`` (yuv420p), ``actions.jsonl`` and ``meta.json``; no depth or pose sidecars
    (most real rollouts have none), so the depth-free motion-type path runs."""
    world = ProceduralWorld(WorldConfig())
    schedule = Schedule.per_key(keys, seconds_per_key, world.fps)
    directory.mkdir(parents=True, exist_ok=True)
    container = av.open(str(directory / "video.mp4"), "w")
    stream = container.add_stream("libx264", rate=Fraction(int(world.fps)))
    stream.width, stream.height = world.width, world.height
    stream.pix_fmt = "yuv420p"
    stream.options = {"preset": "veryfast", "crf": "18"}
    with (directory / "actions.jsonl").open("w") as actions:
        for i, key in enumerate(schedule.frame_keys()):
            frame = av.VideoFrame.from_ndarray(world.step(key).image, format="rgb24")
            frame.pts = i
            container.mux(stream.encode(frame))
            actions.write(json.dumps({"frame": i, "key": key}) + "\n")
    container.mux(stream.encode(None))
    container.close()
    meta = {
        "format": "streameval.rollout/1",
        "fps": world.fps,
        "suite": "bench",
        "trajectory": None,
        "model": "procedural-world[clean]",
        "width": world.width,
        "height": world.height,
    }
    (directory / "meta.json").write_text(json.dumps(meta))
    return directory

"""Building blocks for pipeline tests: procedural-world episodes and synthetic sources."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from streameval.protocol.schedule import Schedule
from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

from streameval.core.events import (
    EndOfStream,
    EpisodeEnd,
    EpisodeInfo,
    EpisodeStart,
    Event,
    FrameEvent,
)
from streameval.core.observers import EpisodeObserver, EpisodeOutcome
from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.transports.inprocess.driver import InProcessSource


def world_source(
    keys: Sequence[str], seconds_per_key: float, defect: str = "clean", **overrides: Any
) -> InProcessSource:
    world = ProceduralWorld(world_config_for_defect(defect, **overrides))
    schedule = Schedule.per_key(list(keys), seconds_per_key, world.fps)
    return InProcessSource(
        world,
        schedule,
        episode=f"{defect}_{''.join(keys)}",
        model_name=f"procedural-world[{defect}]",
        suite="test",
        width=world.width,
        height=world.height,
    )


def run(
    source: Any,
    results_dir: Path | None = None,
    observers: list[EpisodeObserver] | None = None,
    config: PipelineConfig | None = None,
) -> EpisodeOutcome:
    # PySceneDetect unless a test asks otherwise: a TransNetV2 worker (torch) per episode
    # would triple the suite's time on two cores.
    config = config or PipelineConfig(cuts="scenedetect-adaptive")
    return asyncio.run(
        run_episode(source, config=config, results_dir=results_dir, observers=observers)
    )


def textured(seed: int, height: int = 216, width: int = 320) -> np.ndarray:
    """A smooth random texture (flow is well posed on it)."""
    import cv2

    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (height // 4, width // 4, 3), dtype=np.uint8)
    return np.asarray(cv2.resize(base, (width, height), interpolation=cv2.INTER_CUBIC))


class ListSource:
    """An in-memory source: a fixed list of events (droppable when it plays a live stream)."""

    def __init__(self, events: list[Event], droppable: bool = False, delay_s: float = 0.0):
        self.events = list(events)
        self.droppable = droppable
        self.delay_s = delay_s
        self.closed = False

    async def recv(self) -> Event:
        if not self.events:
            raise EndOfStream
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return self.events.pop(0)

    async def close(self) -> None:
        self.closed = True


def shifting_events(
    keys: Sequence[str], frames_per_key: int, fps: float = 16.0, px_per_frame: int = 2
) -> list[Event]:
    """Frames of a texture that shifts right under A/L, left under D/R (content motion)."""
    schedule = Schedule.per_key(list(keys), frames_per_key / fps, fps)
    info = EpisodeInfo("synthetic", "synthetic-model", "test", fps, schedule, "memory")
    big = textured(7, 216, 320 + 4 * px_per_frame * schedule.total_frames)
    events: list[Event] = [EpisodeStart(info)]
    offset = 2 * px_per_frame * schedule.total_frames
    for i in range(schedule.total_frames):
        key = schedule.key_for_frame(i)
        offset += {"A": -1, "L": -1, "D": 1, "R": 1}.get(key, 0) * px_per_frame
        image = np.ascontiguousarray(big[:, offset : offset + 320])
        events.append(FrameEvent(i, image, key, i / fps))
    events.append(EpisodeEnd(schedule.total_frames))
    return events

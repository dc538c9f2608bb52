"""An in-memory source for the dashboard tests: a known rollout, no files, no model.

Frames are a smooth random texture seen through a window that slides one way per key, so the
flow has the sign each key expects (A/L: content moves right = +Sx; D/R: left = −Sx). The
source can hold before a given frame (or before EpisodeStart) until the test releases it
(``gate``), which makes "mid-episode" a deterministic moment, and can report a non-fatal error
at a given frame.
"""

from __future__ import annotations

import asyncio
import functools
import io
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, ParamSpec

import cv2
import numpy as np
import numpy.typing as npt
from streameval.protocol.schedule import Schedule
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Static

from streameval.core.events import (
    EndOfStream,
    EpisodeEnd,
    EpisodeInfo,
    EpisodeStart,
    Event,
    FrameEvent,
    SourceError,
)
from streameval.core.source import Source
from streameval.engine.config import PipelineConfig
from streameval.errors import BadInputError
from streameval.runs.jobs import EpisodeJob

WIDTH, HEIGHT = 96, 64
SHIFT_PX = 2  # per frame
# Small analysis frames and the CPU memory backends (no TransNetV2 start-up) keep a whole
# episode under a second; memory metrics still appear at episode end.
FAST_CONFIG = PipelineConfig(
    queue_size=4,
    provisional_every_s=0.0,
    analysis_width=WIDTH,
    analysis_height=HEIGHT,
    embedding="cpu-colorhist-rbf",
    cuts="scenedetect-adaptive",
)
P = ParamSpec("P")


def async_test(test: Callable[P, Coroutine[Any, Any, None]]) -> Callable[P, None]:
    """Run an async test in a fresh event loop (no asyncio plugin needed for pytest)."""

    @functools.wraps(test)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


_DIRECTION = {"A": 1, "L": 1, "D": -1, "R": -1}


def texture(width: int, height: int, seed: int) -> npt.NDArray[np.uint8]:
    """A smooth random RGB texture (blurred noise: DIS flow locks onto it reliably)."""
    rng = np.random.default_rng(seed)
    noise = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    return np.ascontiguousarray(cv2.GaussianBlur(noise, (0, 0), 2.0))


class ShiftingSource:
    """EpisodeStart, one FrameEvent per scheduled frame, EpisodeEnd; then EndOfStream."""

    droppable = False

    def __init__(
        self,
        keys: Sequence[str],
        frames_per_key: int,
        *,
        episode: str = "ep",
        model: str = "synthetic",
        fps: float = 16.0,
        hold_at: int | None = None,
        hold_start: bool = False,
        error_at: int | None = None,
        seed: int = 0,
    ) -> None:
        self.schedule = Schedule(
            tuple(keys),
            fps,
            tuple(j * frames_per_key for j in range(len(keys) + 1)),
        )
        total = self.schedule.total_frames
        self.canvas = texture(WIDTH + 2 * SHIFT_PX * total + 2, HEIGHT, seed)
        self.info = EpisodeInfo(
            episode=episode,
            model=model,
            suite="test",
            fps=fps,
            schedule=self.schedule,
            source=f"memory:{episode}",
            width=WIDTH,
            height=HEIGHT,
        )
        self.hold_at = hold_at
        self.hold_start = hold_start
        self.gate = asyncio.Event()
        self.error_at = error_at
        self.closed = False
        self._events = self._generate()

    def _generate(self) -> list[Event]:
        events: list[Event] = [EpisodeStart(self.info)]
        x = SHIFT_PX * self.schedule.total_frames + 1  # window start: room both ways
        for i, key in enumerate(self.schedule.frame_keys()):
            # Content moves right when the window moves left.
            x -= SHIFT_PX * _DIRECTION.get(key, 0)
            image = np.ascontiguousarray(self.canvas[:, x : x + WIDTH])
            if i == self.error_at:
                events.append(SourceError(f"memory:{self.info.episode}: glitch at frame {i}"))
            events.append(FrameEvent(index=i, image=image, key=key, t_video=i / self.info.fps))
        events.append(EpisodeEnd(frames=self.schedule.total_frames))
        return events

    async def recv(self) -> Event:
        if not self._events:
            raise EndOfStream
        event = self._events[0]
        held = isinstance(event, FrameEvent) and event.index == self.hold_at
        if held or (self.hold_start and isinstance(event, EpisodeStart)):
            await self.gate.wait()
        return self._events.pop(0)

    async def close(self) -> None:
        self.closed = True


def shifting_job(out: Path, name: str, source: ShiftingSource) -> EpisodeJob:
    def open_source() -> Source:
        return source

    return EpisodeJob(name, open_source, out / name)


def bad_job(out: Path, name: str) -> EpisodeJob:
    def open_source() -> Source:
        raise BadInputError(f"{name}.mp4", "no such rollout")

    return EpisodeJob(name, open_source, out / name)


def widget_text(widget: Widget) -> str:
    """What ``widget`` shows on screen, border and title included, as plain text."""
    width, height = widget.outer_size
    return "\n".join(strip.text for strip in widget.render_lines(Region(0, 0, width, height)))


def content_text(widget: Static) -> str:
    """Everything a scrollable Static holds, whether scrolled into view or not."""
    from rich.console import Console

    console = Console(width=widget.content_size.width, record=True, file=io.StringIO())
    console.print(widget.content)
    return console.export_text()


async def wait_until(
    pilot: Pilot[Any], predicate: Callable[[], object], timeout: float = 15.0
) -> None:
    """Let the app (and the pipeline in its loop) run until ``predicate`` holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.02)


async def wait_for_text(pilot: Pilot[Any], widget: Widget, *needles: str) -> str:
    """Wait until ``widget`` shows every one of ``needles`` (repaints are rate-limited);
    returns its text."""
    try:
        await wait_until(pilot, lambda: all(n in widget_text(widget) for n in needles), 10.0)
    except AssertionError:
        raise AssertionError(f"{needles!r} not shown in:\n{widget_text(widget)}") from None
    return widget_text(widget)

"""The protocol driver for an in-process model: any object with ``step(key) -> frame``.

The driver owns the schedule and the clock: frame i is conditioned on the key the schedule
gives for video time i / fps, so a slow model still gets its 20 s of video per key. The model
runs in a worker thread so the event loop keeps serving the pipeline meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol

import numpy as np

from streameval.events import (
    EndOfStream,
    EpisodeEnd,
    EpisodeInfo,
    EpisodeStart,
    Event,
    FrameEvent,
    KeySent,
    SourceError,
)
from streameval.protocol.schedule import Schedule


class SteppableModel(Protocol):
    """A world model in the same process: one call per frame."""

    def step(self, key: str) -> Any: ...


def _optional_array(frame: Any, name: str, dtype: type) -> Any:
    value = getattr(frame, name, None)
    if value is None:
        return None
    return np.asarray(value, dtype=dtype)


class InProcessSource:
    """Drives ``model`` through ``schedule`` and yields its frames as events.

    A frame may be a bare H×W×3 uint8 array or an object with ``image`` and optional ``pose``
    (4×4 camera-to-world), ``depth`` and ``intrinsics`` attributes.
    """

    droppable = False  # the driver simply waits: stepping is the back-pressure

    def __init__(
        self,
        model: SteppableModel,
        schedule: Schedule,
        *,
        episode: str,
        model_name: str,
        suite: str,
        width: int | None = None,
        height: int | None = None,
        trajectory: str | None = None,
    ) -> None:
        self.model = model
        self.schedule = schedule
        self.info = EpisodeInfo(
            episode=episode,
            model=model_name,
            suite=suite,
            fps=schedule.fps,
            schedule=schedule,
            source=f"python:{model_name}",
            width=width,
            height=height,
            extra={"depth_source": "model", "live": True, "trajectory": trajectory},
        )
        self._pending: list[Event] = [EpisodeStart(self.info)]
        self._next = 0
        self._done = False
        self._closed = False

    async def recv(self) -> Event:
        if self._pending:
            return self._pending.pop(0)
        if self._done or self._closed:
            raise EndOfStream
        i = self._next
        if i >= self.schedule.total_frames:
            self._done = True
            return EpisodeEnd(frames=i, complete=True)
        key = self.schedule.key_for_frame(i)
        sent = time.perf_counter()
        try:
            frame = await asyncio.to_thread(self.model.step, key)
        except Exception as exc:  # the model's own failure ends this episode, not the process
            self._done = True
            self._pending.append(EpisodeEnd(frames=i, complete=False, reason=f"model error: {exc}"))
            return SourceError(
                f"{self.info.source}: step({key!r}) at frame {i} failed: {exc}", True
            )
        self._next = i + 1
        self._pending.append(self._frame_event(i, key, frame))
        return KeySent(key=key, frame=i, t_wall=sent)

    def _frame_event(self, i: int, key: str, frame: Any) -> FrameEvent:
        image = frame if isinstance(frame, np.ndarray) else getattr(frame, "image", frame)
        return FrameEvent(
            index=i,
            image=image,
            key=key,
            t_video=i / self.schedule.fps,
            t_wall=time.perf_counter(),
            pose=_optional_array(frame, "pose", np.float64),
            depth=_optional_array(frame, "depth", np.float32),
            intrinsics=_optional_array(frame, "intrinsics", np.float64),
        )

    async def close(self) -> None:
        self._closed = True

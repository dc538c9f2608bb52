"""The server side of one session: a ``step(key) -> frame`` model answering wire messages.

Shared by ``serve --mqtt`` and ``serve --webrtc``. ``step`` messages render exactly the frame
asked for (video clock: the evaluator decides which key conditions each frame; a step for an
index already rendered is ignored, so a resent request never advances the model twice).
``keydown``/``keyup`` make the host play at the model's own fps with the held key (wall clock,
as a real game server does); without any message for ``idle_timeout_s`` it stops playing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

from streameval.core.tasks import cancel_and_wait
from streameval.protocol.keys import NO_KEY
from streameval.protocol.wire import Bye, Frame, Heartbeat, KeyDown, KeyUp, Message, Reset, Step

PublishFrame = Callable[[Frame], Awaitable[None]]
IDLE_TIMEOUT_S = 5.0


def _optional(out: Any, name: str, dtype: type) -> Any:
    value = getattr(out, name, None)
    return None if value is None else np.asarray(value, dtype=dtype)


def wire_frame(index: int, key: str, out: Any, *, t_server: float | None = None) -> Frame:
    """A model's step output (bare array or object with ``image``, optional ``pose``,
    ``depth``, ``intrinsics``) as a wire frame."""
    image = out if isinstance(out, np.ndarray) else out.image
    return Frame(
        index=index,
        key=key,
        image=np.asarray(image, dtype=np.uint8),
        t_server=t_server,
        pose=_optional(out, "pose", np.float64),
        intrinsics=_optional(out, "intrinsics", np.float64),
        depth=_optional(out, "depth", np.float32),
    )


class ModelHost:
    def __init__(
        self,
        model: Any,
        fps: float,
        publish: PublishFrame,
        *,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
    ) -> None:
        self.model = model
        self.fps = fps
        self.publish = publish
        self.idle_timeout_s = idle_timeout_s
        self.next_index = 0
        self.held = NO_KEY
        self.playing = False
        self.last_message = time.perf_counter()
        self._steps: asyncio.Queue[Step] = asyncio.Queue()
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._step_loop()), asyncio.create_task(self._play())]

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)

    async def handle(self, message: Message) -> None:
        self.last_message = time.perf_counter()
        if isinstance(message, Reset):
            async with self._lock:
                self.playing = False
                while not self._steps.empty():
                    self._steps.get_nowait()
                if callable(getattr(self.model, "reset", None)):
                    await asyncio.to_thread(self.model.reset)
                self.next_index = 0
                self.held = NO_KEY
        elif isinstance(message, Step):
            self._steps.put_nowait(message)
        elif isinstance(message, KeyDown):
            self.held = message.key
            self.playing = True
        elif isinstance(message, KeyUp):
            if message.key == self.held:
                self.held = NO_KEY
        elif isinstance(message, Bye):
            self.playing = False
        elif isinstance(message, Heartbeat):
            pass

    async def _render(self, key: str) -> None:
        out = await asyncio.to_thread(self.model.step, key)
        frame = wire_frame(self.next_index, key, out, t_server=time.time())
        self.next_index += 1
        await self.publish(frame)

    async def _step_loop(self) -> None:
        while True:
            step = await self._steps.get()
            async with self._lock:
                if step.index == self.next_index:
                    await self._render(step.key)

    async def _play(self) -> None:
        """Wall clock: one frame per 1/fps while a client holds the session."""
        period = 1.0 / self.fps
        t_next = time.perf_counter()
        while True:
            now = time.perf_counter()
            if self.playing and now - self.last_message > self.idle_timeout_s:
                self.playing = False  # a silent client is gone (public servers do the same)
            if not self.playing:
                await asyncio.sleep(0.01)
                t_next = time.perf_counter()
                continue
            async with self._lock:
                await self._render(self.held)
            t_next += period
            # a slow model plays slower rather than bursting to catch up
            t_next = max(t_next, time.perf_counter() - period)
            await asyncio.sleep(max(0.0, t_next - time.perf_counter()))

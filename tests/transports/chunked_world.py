"""A chunked world model for the test servers, with no streameval code: it wraps any object
with ``step(key) -> frame`` (``frame.image`` RGB; the tests hand in the procedural world) and
generates ``chunk`` frames at a time under the key in force when the chunk starts, as the
chunked servers of the field do (keys are read at chunk boundaries only).

``reverse`` makes every key act the opposite way; ``delay_s`` makes a key count only that long
after it arrived (a server that answers late).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

import cv2
import numpy as np

OPPOSITE = {"W": "S", "S": "W", "A": "D", "D": "A", "L": "R", "R": "L", "-": "-"}


def jpeg(image: np.ndarray, quality: int = 92) -> bytes:
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(image, cv2.COLOR_RGB2BGR), [1, quality])
    assert ok
    return bytes(buf)


class ChunkedWorld:
    def __init__(
        self, model: Any, chunk: int = 9, *, reverse: bool = False, delay_s: float = 0.0
    ) -> None:
        self.model = model
        self.chunk = chunk
        self.reverse = reverse
        self.delay_s = delay_s
        self.held = "-"
        self._pending: deque[tuple[float, str]] = deque()
        self.presses: deque[tuple[float, str]] = deque()
        self.lock = asyncio.Lock()

    def hold(self, key: str | None) -> None:
        """A keydown (``key``) or keyup (None): in force from ``delay_s`` after now."""
        self._pending.append((time.monotonic() + self.delay_s, key or "-"))

    def press(self, key: str) -> None:
        """One press: one chunk under ``key`` (no keyup), usable ``delay_s`` after now."""
        self.presses.append((time.monotonic() + self.delay_s, key))

    def held_now(self) -> str:
        now = time.monotonic()
        while self._pending and self._pending[0][0] <= now:
            self.held = self._pending.popleft()[1]
        return self.held

    def next_press(self) -> str | None:
        if self.presses and self.presses[0][0] <= time.monotonic():
            return self.presses.popleft()[1]
        return None

    def _render(self, keys: list[str]) -> list[np.ndarray]:
        out = []
        for key in keys:
            k = OPPOSITE.get(key, key) if self.reverse else key
            out.append(np.asarray(self.model.step(k).image))
        return out

    async def generate(self, key: str | list[str]) -> tuple[list[np.ndarray], float]:
        """One chunk (``key`` for every frame, or one key per frame), rendered off the event
        loop; returns the frames and the generation time in ms."""
        keys = [key] * self.chunk if isinstance(key, str) else key
        started = time.perf_counter()
        async with self.lock:
            frames = await asyncio.to_thread(self._render, keys)
        return frames, 1000.0 * (time.perf_counter() - started)

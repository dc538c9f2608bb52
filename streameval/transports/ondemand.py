"""What the two on-demand styles share: a server or program that generates only when asked.

A request-response server (``segments/``) and a process on stdin (``exec/``) make nothing
until we ask, so the episode is driven like our own protocol's video clock, chunk by chunk
(``LiveSource`` ``request`` mode):

- **Key plan.** ``per = "chunk"``: each key in turn is asked for, chunk after chunk, until
  the episode has the frames of its segments so far (``seconds_per_key × fps`` each); a
  chunk that overshoots keeps all its frames, the next key starts after them, and every key
  gets at least one chunk (a chunk longer than a segment never skips a key).
  ``per = "segment"``: one request per key segment. A ``KeySent`` marks each segment's start.
- **Alignment: exact.** Every frame enters with the key that asked for it
  (``alignment: reported``, ``clock: video``).
- **Chunks.** Each answer is one chunk (``ChunkDone``, origin ``server``) whose
  ``generation_ms`` is its wall time, from the request to its decoded frames: the real-time
  metrics and ``server_generation_ms`` read it (docs/serve-formats.md#chunks). The frames of
  an answer all arrive when it does.
- **Back-pressure.** Nothing is dropped: an answer's frames wait for room in the queue, and the
  next request waits for them (the server waits for us, it cannot run ahead).
- **Faults.** A chunk that cannot be had (``GenerationFault``: HTTP error, timeout, not a video,
  no frames, the process gone) ends the episode incomplete with that one line, keeping what
  came (``LiveSource.lost``).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from streameval.constants import DEFAULT_FPS
from streameval.core.arrays import Image
from streameval.errors import GenerationFault, TemplateError
from streameval.protocol.keys import FAMILY, NO_KEY
from streameval.protocol.wire import Frame
from streameval.transports.base import LiveSource
from streameval.transports.live_config import SourceRequest
from streameval.transports.profiles import ServerProfile
from streameval.transports.profiles.templates import render

ROOM_POLL_S = 0.01


class OnDemandSource(LiveSource):
    """Base of the request-response and exec sources: they implement ``generate``."""

    droppable = False  # the server waits for our next request: back-pressure, not drops
    mode = "request"
    chunks_from_server = True

    def __init__(
        self,
        request: SourceRequest,
        *,
        profile: ServerProfile,
        key_names: dict[str, str],
    ) -> None:
        super().__init__(request)
        self.profile = profile
        self.key_names = key_names
        self.chunk = 0  # chunks asked for so far
        self._n = 0  # frames delivered (the server index of the next one)
        self.prepare()

    # ------------------------------------------------------------ what a style implements

    per_segment = False
    """True: one request per key segment (its frame count in ``{frames}``)."""

    def prepare(self) -> None:
        """The style's own set-up from ``self.profile`` and ``self.url`` (its tables are
        checked here): one constructor for every on-demand style."""

    async def generate(self, key: str, values: dict[str, Any]) -> list[Image]:
        """One chunk under ``key``: its frames in order (``values``: the placeholders)."""
        raise NotImplementedError

    # ------------------------------------------------------------ placeholders

    def values(self, key: str, frames: int) -> dict[str, Any]:
        """The placeholders of one request: ``{move}`` / ``{turn}`` are the key's name on
        its own channel and the profile's idle name on the other."""
        spec = self.profile.keys
        name = self.key_names.get(key, key.lower()) if key != NO_KEY else None
        family = FAMILY.get(key)
        fps = self.info.fps if self.info is not None else (self.fps_hint or DEFAULT_FPS)
        return {
            "key": name,
            "keycode": self.profile.keycode(key, name) if name else None,
            "move": name if family in ("fwd", "lat") else spec.no_move,
            "turn": name if family == "yaw" else spec.no_turn,
            "timestamp": round(time.time(), 3),
            "speed": spec.speed,
            "chunk": self.chunk,
            "frames": frames,
            "seconds": round(frames / fps, 6),
            "episode": self.episode,
        }

    def render_for(self, template: Any, key: str, frames: int, what: str) -> Any:
        """A template rendered for one request; ``TemplateError`` names the profile and the
        template (a key with no name on a channel, say)."""
        try:
            return render(template, self.values(key, frames))
        except TemplateError as exc:
            raise TemplateError(f"profile {self.profile.name!r}: {what}: {exc}") from None

    # ------------------------------------------------------------ the driver

    async def drive_requests(self) -> None:
        assert self.info is not None
        schedule = self.info.schedule
        chunk_frames = max(1, self.profile.keys.chunk_frames)
        try:
            if self.per_segment:
                for j, key in enumerate(self.keys):
                    if self._ended:
                        return
                    self._segment_starts(key)
                    frames = schedule.boundaries[j + 1] - schedule.boundaries[j]
                    await self._one_chunk(key, frames)
            else:
                for j, key in enumerate(self.keys):
                    if self._ended:
                        return
                    self._segment_starts(key)
                    asked = 0
                    # every key gets a chunk, even when the last one ran past its segment
                    while not self._ended and (
                        not asked or self.log.n_frames < schedule.boundaries[j + 1]
                    ):
                        await self._one_chunk(key, chunk_frames)
                        asked += 1
            self._finish(complete=True, reason=None)
        except GenerationFault as exc:
            self.lost(str(exc))
        except TemplateError as exc:
            self.lost(f"{exc} (the profile's template does not render)")
        except Exception as exc:  # never a silent dead driver: the episode ends, says why
            self.lost(f"generating failed: {type(exc).__name__}: {exc}")

    def _segment_starts(self, key: str) -> None:
        self.press(key, self.log.n_frames)

    async def _one_chunk(self, key: str, frames: int) -> None:
        started = time.perf_counter()
        images = await self.generate(key, self.values(key, frames))
        wall_ms = 1000.0 * (time.perf_counter() - started)
        if self._ended:
            return
        if not images:
            raise GenerationFault(f"chunk {self.chunk} under key {key} has no frames")
        self.chunk += 1
        self.server_chunk(len(images), {"generation_ms": round(wall_ms, 3)})
        arrived = time.perf_counter()
        for image in images:
            while self._pending_frames >= self.config.max_pending_frames and not self._ended:
                await asyncio.sleep(ROOM_POLL_S)
            if self._ended:
                return
            self.deliver(Frame(index=self._n, key=key, image=image), arrived)
            self._n += 1

    # ------------------------------------------------------------ unused LiveSource hooks

    async def send_step(self, index: int, key: str) -> None:
        raise NotImplementedError("an on-demand source drives its own requests")

    async def send_key(self, kind: Any, key: str | None) -> None:
        raise NotImplementedError("an on-demand source drives its own requests")


TIMEOUT_MARGIN_S = 10.0
"""The stall guard sits this far past a style's own timeouts, which name the fault better."""

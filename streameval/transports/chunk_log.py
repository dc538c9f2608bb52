"""Chunk boundaries of a live session: from the server's statistics messages, or from bursts.

Every served world model the field runs generates in chunks (9–16 frames), so a key can only
take effect at a chunk boundary, and the server's own figures (generation time, queue depth,
frames it dropped) are per chunk (docs/serve-formats.md#chunks). Two ways to find them:

- **server**: the profile names a statistics message (WorldFoundry's ``chunk_done``). It says
  how many frames the chunk has; it may come before those frames (WorldFoundry queues a chunk,
  announces it, then paces the frames out), so a chunk is closed only once the first frame
  after it arrives, or when the episode ends. Positions are counted in the server's stream
  (``Frame.index``), so frames we rejected or that came before our first key do not shift
  the boundaries of the episode's frames.
- **bursts**: no statistics; a chunk server that sends a chunk as fast as it can, then
  generates the next, shows a pause between bursts. A frame whose gap to the previous one
  exceeds ``BURST_RATIO`` times the median gap inside the current burst (and half a frame
  interval) opens a new chunk. A server that paces its frames evenly shows no chunks.

The log emits ``ChunkDone`` events in episode frame numbers; the recorder keeps them
(``chunks.jsonl``) so a replay has exactly the same chunks.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from streameval.core.events import ChunkDone

BURST_RATIO = 4.0
MIN_BURST_GAPS = 2
"""A burst needs this many gaps before its median is trusted."""


@dataclass
class _Announced:
    start: int  # server stream position of its first frame
    end: int  # one past its last frame
    stats: dict[str, float]
    t_wall: float


MAP_FRAMES = 8192
"""Server position → episode frame of the last frames admitted (a chunk is closed long before)."""


@dataclass
class ChunkLog:
    """Chunk boundaries in episode frame numbers; ``from_server`` picks the method."""

    fps: float
    from_server: bool
    chunks: list[ChunkDone] = field(default_factory=list)
    _announced: deque[_Announced] = field(default_factory=deque)
    _server_end: int | None = None
    _map: deque[tuple[int, int]] = field(default_factory=lambda: deque(maxlen=MAP_FRAMES))
    _gaps: list[float] = field(default_factory=list)
    _last_t: float | None = None
    _open_start: int = 0
    _open_frames: int = 0

    # ------------------------------------------------------------ server statistics

    def announce(
        self,
        frames: int | None,
        stats: dict[str, float],
        t_wall: float,
        first: int = 0,
        *,
        held: bool = False,
    ) -> list[ChunkDone]:
        """A statistics message for one chunk, ``frames`` long (None: it ends at the last frame
        received); returns the chunks that are whole already. The first chunk starts at the
        episode's first frame when frames came before the message (a server that announces
        a chunk after sending it), else at ``first``, the next frame to come (one that
        announces a chunk, then paces its frames out). ``held``: frames received are not yet
        in the episode (``transports/native_gate.py``): nothing closes before they are."""
        if self._server_end is None:
            self._server_end = self._map[0][0] if self._map else first
        start = self._server_end
        last = self._map[-1][0] if self._map else start - 1
        end = max(start, last + 1) if frames is None or frames < 0 else start + frames
        self._server_end = end
        self._announced.append(_Announced(start, end, dict(stats), t_wall))
        if held:  # frames received are still held back (native_gate): they close it later
            return []
        return self._close_through(last, t_wall)

    # ------------------------------------------------------------ frames

    def frame(self, episode_index: int, server_index: int, t_wall: float) -> list[ChunkDone]:
        """A frame entered the episode; returns the chunks it completed or closed."""
        if self.from_server:
            self._map.append((server_index, episode_index))
            return self._close_through(server_index, t_wall)
        return self._burst_frame(episode_index, t_wall)

    def _close_through(self, server_index: int, t: float) -> list[ChunkDone]:
        """Close the announced chunks whose last frame is at or before ``server_index``."""
        closed: list[ChunkDone] = []
        while self._announced and self._announced[0].end <= server_index + 1:
            closed.extend(self._close(self._announced.popleft(), t))
        return closed

    def _close(self, chunk: _Announced, t: float) -> list[ChunkDone]:
        mine = [ep for srv, ep in self._map if chunk.start <= srv < chunk.end]
        if not mine:
            return []  # all of it before our first key, or lost: not part of the episode
        return [self._emit(mine[0], len(mine), t, chunk.stats)]

    def _burst_frame(self, episode_index: int, t: float) -> list[ChunkDone]:
        closed: list[ChunkDone] = []
        if self._last_t is not None:
            gap = t - self._last_t
            if self._opens_burst(gap) and self._open_frames:
                closed.append(self._emit(self._open_start, self._open_frames, t, {}))
                self._open_start, self._open_frames = episode_index, 0
                self._gaps = []
            else:
                self._gaps.append(gap)
        self._last_t = t
        self._open_frames += 1
        return closed

    def _opens_burst(self, gap: float) -> bool:
        if len(self._gaps) < MIN_BURST_GAPS:
            return False
        inside = sorted(self._gaps)[len(self._gaps) // 2]
        return gap > max(BURST_RATIO * inside, 0.5 / self.fps)

    # ------------------------------------------------------------ end

    def finish(self, t_wall: float) -> list[ChunkDone]:
        """The episode ended: close what has frames (an open burst only when bursts were seen,
        else the whole episode would count as one chunk)."""
        closed: list[ChunkDone] = []
        if self.from_server:
            while self._announced:
                closed.extend(self._close(self._announced.popleft(), t_wall))
        elif self.chunks and self._open_frames:
            closed.append(self._emit(self._open_start, self._open_frames, t_wall, {}))
            self._open_frames = 0
        return closed

    def _emit(self, start: int, frames: int, t: float, stats: dict[str, float]) -> ChunkDone:
        event = ChunkDone(
            index=len(self.chunks),
            start=start,
            frames=frames,
            t_wall=t,
            origin="server" if self.from_server else "bursts",
            stats=stats,
        )
        self.chunks.append(event)
        return event

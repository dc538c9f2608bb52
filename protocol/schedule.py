"""Key schedules driven by a video clock.

The clock is the frame count divided by the fps, never wall time: a model that renders slowly
still gets 20 s of *video* per key (docs/methods.md#frame-rate). Segment boundaries are whole
frames.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from streameval.protocol.keys import parse_key


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of frames conditioned on one key: frames ``start`` (inclusive) to ``end``."""

    key: str
    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class Schedule:
    """Which key conditions each frame of an episode.

    ``boundaries`` has one entry more than ``keys``: segment j spans frames
    ``boundaries[j]`` to ``boundaries[j + 1]``.
    """

    keys: tuple[str, ...]
    fps: float
    boundaries: tuple[int, ...]

    @classmethod
    def per_key(cls, keys: Sequence[str], seconds_per_key: float, fps: float) -> Schedule:
        """Each key held ``seconds_per_key`` of video at ``fps``."""
        if not keys:
            raise ValueError("a schedule needs at least one key")
        if seconds_per_key <= 0 or fps <= 0:
            raise ValueError(f"seconds_per_key and fps must be > 0, got {seconds_per_key}, {fps}")
        canon = tuple(parse_key(k) for k in keys)
        bounds = tuple(round(j * seconds_per_key * fps) for j in range(len(canon) + 1))
        return cls(canon, float(fps), bounds)

    @classmethod
    def split_equally(cls, keys: Sequence[str], total_frames: int, fps: float) -> Schedule:
        """A delivery without an action log: its duration split equally among the keys."""
        if not keys:
            raise ValueError("a schedule needs at least one key")
        canon = tuple(parse_key(k) for k in keys)
        n = len(canon)
        bounds = tuple(round(j * total_frames / n) for j in range(n + 1))
        return cls(canon, float(fps), bounds)

    @property
    def total_frames(self) -> int:
        return self.boundaries[-1]

    @property
    def duration_s(self) -> float:
        return self.total_frames / self.fps

    def segments(self) -> list[Segment]:
        return [
            Segment(k, self.boundaries[j], self.boundaries[j + 1]) for j, k in enumerate(self.keys)
        ]

    def segment_index(self, frame: int) -> int:
        """The segment that frame ``frame`` belongs to (frames past the end: the last)."""
        for j in range(len(self.keys)):
            if frame < self.boundaries[j + 1]:
                return j
        return len(self.keys) - 1

    def key_for_frame(self, frame: int) -> str:
        return self.keys[self.segment_index(frame)]

    def frame_keys(self) -> list[str]:
        return [
            self.keys[j]
            for j in range(len(self.keys))
            for _ in range(self.boundaries[j + 1] - self.boundaries[j])
        ]


def segments_from_keys(frame_keys: Sequence[str]) -> list[Segment]:
    """Maximal runs of one key in a per-frame action log."""
    segments: list[Segment] = []
    start = 0
    for i in range(1, len(frame_keys) + 1):
        if i == len(frame_keys) or frame_keys[i] != frame_keys[start]:
            segments.append(Segment(frame_keys[start], start, i))
            start = i
    return segments

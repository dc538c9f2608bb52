"""Frozen event types that flow from a source (live transport or replay) into the pipeline.

Control events (start, end, key sent, errors) are never dropped; frame events may be, under the
pipeline's declared policy, and every drop is counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.core.arrays import F64, Image
from streameval.protocol.schedule import Schedule


class EndOfStream(Exception):
    """Raised by ``Source.recv`` when the episode has no more events.

    Outside the ``StreamevalError`` tree on purpose: it is the normal end of a stream, as
    ``StopAsyncIteration`` is, never a failure; a handler of the error tree must not catch it.
    """


RESPONSE_HINT_KEY = "response_hint_s"
"""``EpisodeInfo.extra`` key: the seconds from a key to the picture answering it that the
server's profile states (``response_s``), so a run whose keys are too short for that cadence
is told before its first frame (``engine.cadence_watch``)."""


@dataclass(frozen=True, slots=True)
class EpisodeInfo:
    """What is known about an episode before its first frame.

    ``schedule`` is the key plan (from the protocol driver, an action log, or a delivery's
    equal split); the per-frame keys of ``FrameEvent`` remain the authority on segments.
    """

    episode: str
    model: str
    suite: str
    fps: float
    schedule: Schedule
    source: str
    width: int | None = None
    height: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EpisodeStart:
    info: EpisodeInfo


@dataclass(frozen=True, slots=True, eq=False)
class FrameEvent:
    """One frame of video and what came with it.

    ``image`` is H×W×3 uint8 RGB. ``key`` is the key that conditioned this frame. ``pose`` is a
    4×4 camera-to-world matrix (OpenCV axes), ``depth`` a metric z-depth map covering the same
    field of view at its own size, ``intrinsics`` the 3×3 camera matrix of ``image``.
    """

    index: int
    image: Image
    key: str
    t_video: float
    t_wall: float | None = None
    pose: F64 | None = None
    depth: npt.NDArray[np.float32] | None = None
    intrinsics: F64 | None = None


@dataclass(frozen=True, slots=True)
class KeySent:
    """A keystroke the driver sent, with the frame it was meant to condition."""

    key: str
    frame: int
    t_wall: float


@dataclass(frozen=True, slots=True)
class ChunkDone:
    """A server generated (or delivered) one chunk: frames ``start`` .. ``start + frames - 1``.

    Chunked servers (9–16 frames a chunk) answer keys at chunk boundaries only, so a key's
    response floor is one chunk (docs/serve-formats.md#chunks). ``origin`` says how the
    boundary was found: ``"server"`` (a statistics message such as WorldFoundry's
    ``chunk_done``) or ``"bursts"`` (a pause in the arrivals). ``stats`` holds what the server
    reported for the chunk under our names (``generation_ms``, ``control_latency_ms``,
    ``queue_depth``, ``dropped_frames``), only those it sent. ``t_wall``: when the chunk closed.
    """

    index: int
    start: int
    frames: int
    t_wall: float
    origin: str = "server"
    stats: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "chunk": self.index,
            "start": self.start,
            "frames": self.frames,
            "t_wall": self.t_wall,
            "origin": self.origin,
            "stats": dict(self.stats),
        }


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """The one error channel of an episode (after pipecat's ``ErrorFrame``).

    Whoever has a problem — the source, perception rejecting a frame, a backend that could not
    start or failed at the end, the recorder, a command that could not open its input — emits
    one of these; the pipeline hands it to every observer (``on_error``: dashboard log,
    console), keeps it in ``EpisodeOutcome.errors`` and writes it to ``scores.json``'s
    ``errors``. ``fatal`` from a source ends the episode (marked incomplete). ``message`` is one
    line naming the input; ``source`` says who reported it (``source``, ``perception``,
    ``cut_detector``, ``recorder``, ``input``, ...); ``frame`` when it concerns one frame.
    """

    message: str
    fatal: bool = False
    source: str = "source"
    frame: int | None = None

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "message": self.message,
            "fatal": self.fatal,
            "frame": self.frame,
        }


# What a source emits on error: the same event (its ``source`` defaults to "source").
SourceError = ErrorEvent


@dataclass(frozen=True, slots=True)
class EpisodeEnd:
    """The source has no more frames. ``complete`` is False when it stopped early."""

    frames: int
    complete: bool = True
    reason: str | None = None


Event = EpisodeStart | FrameEvent | KeySent | ChunkDone | ErrorEvent | EpisodeEnd

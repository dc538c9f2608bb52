"""What the pipeline tells the outside world: a small observer interface.

The pipeline never touches a UI; it calls these hooks from its event loop. Hooks must be
cheap (a recorder hands frames to its writer thread, a dashboard posts coalescing messages).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streameval.core.episode.scores import EpisodeScores
from streameval.core.events import ChunkDone, EpisodeInfo, ErrorEvent, FrameEvent, KeySent
from streameval.core.metric_result import MetricResult


@dataclass(frozen=True, slots=True)
class Progress:
    """The state of an episode after a frame was perceived."""

    info: EpisodeInfo
    frame: int
    key: str
    sx: float | None
    srad: float | None
    frames_done: int
    frames_total: int | None
    fps: float  # frames perceived per wall second, recent average
    queue_depth: int
    dropped: int
    provisional: dict[str, MetricResult] | None = None


@dataclass(frozen=True, slots=True)
class EpisodeOutcome:
    info: EpisodeInfo
    scores: EpisodeScores
    results_dir: Path | None
    complete: bool
    frames: int
    errors: list[ErrorEvent] = field(default_factory=list)
    interactivity: dict[str, Any] = field(default_factory=dict)
    # scores.json's runtime block (metrics/runtime.py): a served stream's native frames,
    # real-time verdict and responsiveness; None for sessions without received frames
    runtime: dict[str, Any] | None = None
    # the frames perception sampled and dropped (perception_plan.py): a recording keeps them
    perception: dict[str, Any] = field(default_factory=dict)
    # a benchmark case's episode: the case record and the first-frame check's record
    # (scores.json's "case" and "conditioning"); None for any other episode
    case: dict[str, Any] | None = None
    conditioning: dict[str, Any] | None = None


class EpisodeObserver:
    """Base observer: every hook a no-op; subclasses override what they need."""

    def bind(self, report: Callable[[ErrorEvent], None]) -> None:
        """Called once before the episode with the episode's error channel: an observer with a
        problem of its own (a recorder whose disk is full) reports it there, and it reaches
        every observer (dashboard, console), the outcome and ``scores.json`` like any other
        error — never printed over a full-screen UI, never lost."""

    def on_start(self, info: EpisodeInfo) -> None:
        """An episode began (first event of a source)."""

    def on_frame(self, event: FrameEvent) -> None:
        """A frame was received, before perception (recorders hook here: nothing is lost)."""

    def on_key(self, event: KeySent) -> None:
        """The driver sent a keystroke."""

    def on_chunk(self, event: ChunkDone) -> None:
        """A chunked server finished a chunk (boundaries and the server's own statistics)."""

    def on_progress(self, progress: Progress) -> None:
        """A frame was perceived; ``provisional`` is set at most every update interval."""

    def on_error(self, error: ErrorEvent) -> None:
        """A non-fatal or fatal problem (``error.message``: one line naming its input)."""

    def on_warning(self, message: str) -> None:
        """Something the user should check while the episode runs (keys that move nothing:
        ``engine/keys_ignored.py``); not an error: the episode goes on and its scores stand."""

    def on_end(self, outcome: EpisodeOutcome) -> None:
        """Final scores are written."""

"""The bridge from the pipeline to the dashboard: an ``EpisodeObserver`` that only posts.

The pipeline calls observers from the App's own event loop (the pipeline runs there as a
worker), so ``post_message`` needs no thread hand-off. Hooks stay cheap — an append and a
queue put — because they run between frames of the evaluation itself.
"""

from __future__ import annotations

from collections.abc import Callable

from streameval.tui.messages import (
    EpisodeEnded,
    EpisodeErrored,
    EpisodeProgressed,
    EpisodeStarted,
    EpisodeWarned,
)
from streameval.tui.state import SignalTrace
from textual.message import Message

from streameval.core.events import EpisodeInfo, ErrorEvent, FrameEvent, KeySent
from streameval.core.observers import EpisodeObserver, EpisodeOutcome, Progress

Post = Callable[[Message], object]


class DashboardObserver(EpisodeObserver):
    """Posts one job's episode to the dashboard; never touches a widget.

    One observer per job (the runner makes them), so every message names its job even when
    two episodes share a name. ``outcome`` keeps the final outcome: a run stopped with ``q``
    raises ``CancelledError`` out of ``run_job`` and the report learns the outcome from here.
    """

    def __init__(self, post: Post, job: int) -> None:
        self.post = post
        self.job = job
        self.trace = SignalTrace()
        self.outcome: EpisodeOutcome | None = None

    def on_start(self, info: EpisodeInfo) -> None:
        self.post(EpisodeStarted(self.job, info, self.trace))

    def on_frame(self, event: FrameEvent) -> None:
        self.trace.frames_received += 1

    def on_key(self, event: KeySent) -> None:
        self.trace.key_sent = event.key

    def on_progress(self, progress: Progress) -> None:
        self.trace.append(progress)
        self.post(EpisodeProgressed(self.job, progress))

    def on_error(self, error: ErrorEvent) -> None:
        self.post(EpisodeErrored(self.job, error.message))

    def on_warning(self, message: str) -> None:
        self.post(EpisodeWarned(self.job, message))

    def on_end(self, outcome: EpisodeOutcome) -> None:
        self.outcome = outcome
        self.post(EpisodeEnded(self.job, outcome))

"""Messages the pipeline side posts to the dashboard App (the pipeline never touches
widgets).

Control messages (start, error, end, finished) are never merged. ``EpisodeProgressed`` arrives
once per perceived frame — hundreds per second in a fast replay — so it coalesces: a newer
progress message of the same job supersedes a queued older one, and the UI repaints once per
burst instead of falling behind the stream. What must not be lost in the merge (the signal
history, the latest provisional scores) is kept in the job's ``SignalTrace``.
"""

from __future__ import annotations

from streameval.tui.state import SignalTrace
from textual.message import Message

from streameval.core.events import EpisodeInfo
from streameval.core.observers import EpisodeOutcome, Progress
from streameval.runs.jobs import JobsReport


class EpisodeStarted(Message):
    """Job ``job`` announced its episode (the pipeline's ``on_start``)."""

    def __init__(self, job: int, info: EpisodeInfo, trace: SignalTrace) -> None:
        super().__init__()
        self.job = job
        self.info = info
        self.trace = trace


class EpisodeProgressed(Message):
    """A frame of job ``job`` was perceived; coalesces with queued progress of the same job."""

    def __init__(self, job: int, progress: Progress) -> None:
        super().__init__()
        self.job = job
        self.progress = progress

    def can_replace(self, message: Message) -> bool:
        # Textual asks the message being dispatched whether the next queued one supersedes it:
        # a later frame of the same episode does (the trace still has every sample).
        return isinstance(message, EpisodeProgressed) and message.job == self.job


class EpisodeErrored(Message):
    """A one-line problem of job ``job`` (bad input, a rejected frame, a source error)."""

    def __init__(self, job: int, text: str) -> None:
        super().__init__()
        self.job = job
        self.text = text


class EpisodeWarned(Message):
    """Something to check in job ``job`` while it runs (keys that move nothing)."""

    def __init__(self, job: int, text: str) -> None:
        super().__init__()
        self.job = job
        self.text = text


class EpisodeEnded(Message):
    """Job ``job`` was finalized (complete or not): final scores and the results dir."""

    def __init__(self, job: int, outcome: EpisodeOutcome) -> None:
        super().__init__()
        self.job = job
        self.outcome = outcome


class PipelineFinished(Message):
    """Every job ran, or the run was stopped (``stopped``) or failed (``failure``)."""

    def __init__(self, report: JobsReport, stopped: bool, failure: str | None = None) -> None:
        super().__init__()
        self.report = report
        self.stopped = stopped
        self.failure = failure

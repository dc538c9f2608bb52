"""What the dashboard knows about each episode: plain data, no widgets, no asyncio.

Two halves, both living on the App's event loop:

- ``SignalTrace`` is written by the pipeline side (``DashboardObserver``) on every perceived
  frame. Progress messages coalesce (a burst of frames becomes one repaint), so anything the UI
  must not lose — the Sx/Srad history for the sparklines, the latest provisional scores — is
  accumulated here rather than carried by the messages.
- ``EpisodeState`` / ``DashboardModel`` are updated by the App from the messages it handles and
  read by the screens when they repaint.

Keeping this module free of Textual makes it testable without an App and keeps the widgets thin.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from streameval.tui.case_scores import case_values, read_case_record
from streameval.tui.cases import (
    CaseBoard,
    CaseEntry,
    CaseProgress,
    StopView,
    case_progress,
)

from streameval.core.events import EpisodeInfo
from streameval.core.metric_result import MetricResult
from streameval.core.observers import EpisodeOutcome, Progress
from streameval.results.scores_file import SCORES_FILE, EpisodeRecord


class JobStatus(StrEnum):
    """Where one job of the command stands, as the episode list shows it."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    INCOMPLETE = "incomplete"
    BAD_INPUT = "bad input"
    SKIPPED = "skipped"  # quit before its turn came


class LogLevel(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of the dashboard's event log; ``job`` None = about the whole command."""

    level: LogLevel
    text: str
    job: int | None = None


class SignalTrace:
    """Per-frame Sx/Srad and keys of one episode, appended by the observer.

    NaN stands for "no signal yet" (the first frames of a flow stride, dropped frames), so the
    history stays aligned with the perceived frames.
    """

    __slots__ = ("frames_received", "key_sent", "keys", "provisional", "srad", "sx")

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.sx: array[float] = array("d")
        self.srad: array[float] = array("d")
        self.provisional: dict[str, MetricResult] | None = None
        self.key_sent: str | None = None
        self.frames_received = 0

    def append(self, progress: Progress) -> None:
        """Record one perceived frame; keep the most recent provisional scores."""
        self.keys.append(progress.key)
        self.sx.append(math.nan if progress.sx is None else progress.sx)
        self.srad.append(math.nan if progress.srad is None else progress.srad)
        if progress.provisional is not None:
            self.provisional = progress.provisional

    def __len__(self) -> int:
        return len(self.keys)


@dataclass
class EpisodeState:
    """One job of the command as the live screen shows it."""

    job: int
    name: str
    status: JobStatus = JobStatus.QUEUED
    info: EpisodeInfo | None = None
    progress: Progress | None = None
    trace: SignalTrace = field(default_factory=SignalTrace)
    outcome: EpisodeOutcome | None = None
    errors: list[str] = field(default_factory=list)
    last_frame_at: float | None = None  # the dashboard clock at the latest progress message
    started_at: float | None = None
    ended_at: float | None = None
    case: tuple[str, str] | None = None  # a benchmark case's (set, name)

    @property
    def title(self) -> str:
        """The episode's own name once it started (the job's name before)."""
        return self.info.episode if self.info is not None else self.name

    @property
    def final(self) -> bool:
        """Scores are final: the episode ended (complete or not) and was scored."""
        return self.outcome is not None

    @property
    def fraction_done(self) -> float | None:
        """Perceived frames / scheduled frames, in [0, 1]; None before the first frame."""
        p = self.progress
        if p is None or not p.frames_total:
            return None
        return min(1.0, p.frames_done / p.frames_total)


def outcome_record(outcome: EpisodeOutcome, case: tuple[str, str]) -> EpisodeRecord:
    """What the table reads of a case that ended in this command: its ``scores.json`` when
    written (the table's own numbers), else its outcome as the observers got it (a remote
    run's, whose results stay with the evaluator)."""
    if outcome.results_dir is not None:
        record = read_case_record(outcome.results_dir / SCORES_FILE)
        if record is not None:
            return record
    info = outcome.info
    return EpisodeRecord(
        (outcome.results_dir or Path(info.episode)) / SCORES_FILE,
        info.model,
        info.suite,
        info.episode,
        outcome.complete,
        info.fps,
        outcome.frames,
        outcome.scores.metrics,
        case={"set": case[0], "name": case[1]},
    )


@dataclass
class DashboardModel:
    """Every job of the command, the shared event log and what the leaderboard reads."""

    episodes: list[EpisodeState]
    log: list[LogLine] = field(default_factory=list)
    results_dirs: list[Path] = field(default_factory=list)
    running: int | None = None
    selected: int = 0
    follow: bool = True  # the live view follows the running episode until the user picks one
    finished: bool = False
    stopping: bool = False
    failure: str | None = None
    cases: CaseBoard | None = None  # a case run's sets and the cases kept from before
    stop_rule: StopView | None = None  # the run's --stop-when rule (a remote run: its state)
    rule_met: bool = False  # the rule ended the run: the jobs left were not run
    # case_progress() is computed again only when a case started or ended (the status line
    # asks several times a second; the bands are a confidence sequence per column)
    _progress: CaseProgress | None = field(default=None, repr=False, compare=False)
    # each ended case's record, made once: the bands are kept per list of record objects
    # (tui.cases), so a case starting asks for no new computation
    _records: dict[int, EpisodeRecord] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def for_jobs(
        cls, names: list[str], cases: list[tuple[str, str] | None] | None = None
    ) -> DashboardModel:
        episodes = [EpisodeState(i, name) for i, name in enumerate(names)]
        for ep, case in zip(episodes, cases or [], strict=False):
            ep.case = case
        return cls(episodes)

    def case_progress(self) -> CaseProgress | None:
        """The case run's progress (None: no episode of this command runs a case): the
        cases kept from before, then this command's ended cases in the order they ended."""
        if self.cases is None:
            return None
        if self._progress is None:
            self._progress = self._case_progress(self.cases)
        return self._progress

    def forget_progress(self) -> None:
        """The case run changed outside ``start``/``end`` (a remote run's set sizes)."""
        self._progress = None

    def _case_progress(self, board: CaseBoard) -> CaseProgress:
        # A case's time is the gap since the case before ended (the first: since this
        # command's first case started): opening a session and scoring are part of it.
        ended = sorted(
            (ep.ended_at if ep.ended_at is not None else 0.0, ep.job, ep)
            for ep in self.episodes
            if ep.case is not None and ep.outcome is not None
        )
        starts = [ep.started_at for ep in self.episodes if ep.started_at is not None]
        before = min(starts) if starts else None
        mine: list[CaseEntry] = []
        for _, _, ep in ended:
            if ep.case is None or ep.outcome is None:
                continue  # filtered above; says so to the type checker
            seconds = None
            if before is not None and ep.ended_at is not None:
                seconds = max(0.0, ep.ended_at - before)
                before = ep.ended_at
            mine.append(
                CaseEntry(
                    f"{ep.case[0]}/{ep.case[1]}",
                    ep.case[0],
                    ep.outcome.complete,
                    case_values(ep.outcome.scores.metrics, ep.outcome.complete),
                    seconds,
                    self._record(ep),
                )
            )
        entries = [*board.kept, *mine]
        running = self.episodes[self.running] if self.running is not None else None
        totals = dict(board.set_totals)
        for ep in self.episodes:  # a remote run learns its sets as cases arrive
            if ep.case is not None and ep.case[0] not in totals:
                totals[ep.case[0]] = 0
        order, max_keys = board.recorded()
        monitor = self.stop_rule
        return case_progress(
            entries,
            totals,
            running=f"{running.case[0]}/{running.case[1]}"
            if running is not None and running.case is not None
            else None,
            confidence=board.confidence,
            order=order,
            max_keys=max_keys,
            states=None if monitor is None else monitor.column_states,
            rule=None if monitor is None else monitor.summary(),
        )

    def _record(self, ep: EpisodeState) -> EpisodeRecord | None:
        if ep.outcome is None or ep.case is None:
            return None
        record = self._records.get(ep.job)
        if record is None:
            record = self._records[ep.job] = outcome_record(ep.outcome, ep.case)
        return record

    def add_log(self, level: LogLevel, text: str, job: int | None = None) -> LogLine:
        line = LogLine(level, text, job)
        self.log.append(line)
        return line

    def start(self, job: int, info: EpisodeInfo, trace: SignalTrace, now: float) -> None:
        """The episode began; ``trace`` is the one its observer appends to."""
        ep = self.episodes[job]
        ep.info, ep.trace, ep.status, ep.started_at = info, trace, JobStatus.RUNNING, now
        self.running = job
        self._progress = None
        if self.follow:
            self.selected = job

    def progress(self, job: int, progress: Progress, now: float) -> LogLine | None:
        """Take the latest progress; a log line when frames start being dropped."""
        ep = self.episodes[job]
        before = ep.progress.dropped if ep.progress is not None else 0
        ep.progress, ep.last_frame_at = progress, now
        if progress.dropped > 0 and before == 0:
            return self.add_log(
                LogLevel.WARNING,
                f"{ep.title}: the evaluator falls behind, frames are being dropped "
                "(counted, kept as gaps)",
                job,
            )
        return None

    def error(self, job: int, message: str) -> LogLine:
        ep = self.episodes[job]
        ep.errors.append(message)
        if ep.info is None and ep.status is JobStatus.QUEUED:
            # run_job reports a source that cannot be opened before any EpisodeStart.
            ep.status = JobStatus.BAD_INPUT
        return self.add_log(LogLevel.ERROR, message, job)

    def end(self, job: int, outcome: EpisodeOutcome, now: float | None = None) -> list[LogLine]:
        """Final scores: status, the results dir for the leaderboard, and what to log."""
        ep = self.episodes[job]
        ep.outcome, ep.ended_at = outcome, now
        self._progress = None
        self._records.pop(job, None)
        ep.status = JobStatus.DONE if outcome.complete else JobStatus.INCOMPLETE
        if self.running == job:
            self.running = None
        if outcome.results_dir is not None and outcome.results_dir not in self.results_dirs:
            self.results_dirs.append(outcome.results_dir)
        dropped = outcome.interactivity.get("frames_dropped")
        lines: list[LogLine] = []
        if isinstance(dropped, int) and dropped > 0:
            lines.append(
                self.add_log(LogLevel.WARNING, f"{ep.title}: {dropped} frames dropped", job)
            )
        if outcome.complete:
            lines.append(
                self.add_log(
                    LogLevel.INFO, f"{ep.title}: {outcome.frames} frames, final scores", job
                )
            )
        else:
            lines.append(
                self.add_log(
                    LogLevel.WARNING,
                    f"{ep.title}: finalized as incomplete after {outcome.frames} frames",
                    job,
                )
            )
        return lines

    def finish(self, stopped: bool) -> None:
        """The pipeline is done; jobs that never ran are marked skipped."""
        self.finished = True
        self.running = None
        self._progress = None
        if stopped:
            for ep in self.episodes:
                if ep.status is JobStatus.QUEUED:
                    ep.status = JobStatus.SKIPPED

    def select(self, job: int) -> None:
        """The user picked an episode: follow the running one, or stay on the one picked."""
        self.selected = job
        self.follow = self.running is None or job == self.running

    @property
    def selected_episode(self) -> EpisodeState | None:
        if not self.episodes:
            return None
        return self.episodes[min(self.selected, len(self.episodes) - 1)]

    def counts(self) -> dict[JobStatus, int]:
        out = {s: 0 for s in JobStatus}
        for ep in self.episodes:
            out[ep.status] += 1
        return out

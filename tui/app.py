"""The dashboard App: wires the screens to the pipeline's messages; nothing else.

The pipeline runs inside the App's event loop as a Textual worker (``JobRunner``: the same
``run_job`` as ``--no-tui``). Its ``DashboardObserver`` posts messages; the handlers here apply
them to the ``DashboardModel`` and tell the screens which job changed. ``q`` stops the run:
the worker is cancelled, the episode in progress is finalized as incomplete (scores.json
written) and the App exits with the report once the worker is done — never before (a second
``q`` does not wait).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from streameval.tui.cases import (
    CaseBoard,
    CaseProgress,
    progress_of,
    read_case_run,
)
from streameval.tui.messages import (
    EpisodeEnded,
    EpisodeErrored,
    EpisodeProgressed,
    EpisodeStarted,
    EpisodeWarned,
    PipelineFinished,
)
from streameval.tui.observer import DashboardObserver
from streameval.tui.runner import JobRunner
from streameval.tui.screens.cases import CasesScreen
from streameval.tui.screens.leaderboard import LeaderboardScreen
from streameval.tui.screens.live import LiveScreen
from streameval.tui.state import DashboardModel, JobStatus, LogLevel, LogLine
from textual.app import App
from textual.binding import Binding, BindingType
from textual.worker import Worker, WorkerError, WorkerState

from streameval.core.observers import EpisodeObserver
from streameval.engine.config import PipelineConfig
from streameval.errors import BadInputError
from streameval.leaderboard import ExclusionRule
from streameval.runs.jobs import EpisodeJob, JobsReport

if TYPE_CHECKING:
    from streameval.runs.interrupts import SigtermCancels
    from streameval.runs.stop_when import StopMonitor

PIPELINE_WORKER = "pipeline"


@dataclass(frozen=True)
class DashboardOptions:
    """How the dashboard behaves around the pipeline."""

    stay_open: bool = True
    """After the last episode, keep showing the final scores until ``q`` (False: exit)."""
    leaderboard_dirs: tuple[Path, ...] = ()
    """Results dirs shown on the leaderboard besides the episodes finished in this command."""
    exclusion: ExclusionRule | None = None
    """Leaderboard exclusion rule; None: ``streameval table``'s default (``a`` toggles all)."""
    clock: Callable[[], float] = time.monotonic
    """Seconds, for "last frame … ago"; fixed in snapshot tests so nothing moves."""
    repaint_interval_s: float = 0.2
    """Least time between two progress repaints of the live screen (control events: at once)."""
    autostart: bool = True
    """Start the pipeline on mount. False: the caller feeds observers (tests, screenshots)."""
    title: str = "streameval"
    start_mode: str = "live"
    """The first screen: ``live``, ``leaderboard`` or ``cases`` (``streameval dashboard
    RESULTS_DIR``: ``cases`` when a folder holds a case run)."""
    case_runs: tuple[Path, ...] = ()
    """``cases.json`` files of case runs on disk, shown on the case-set view (``c``)."""
    reload_interval_s: float | None = None
    """Read ``case_runs`` again this often (a run still writing into them); None: on ``r``."""
    catch_sigterm: bool = True
    """Stop on SIGTERM as on ``q`` by a handler of the App's own; False: the run that drives
    the App routes SIGTERM to ``stop_on_sigterm`` (``arun_dashboard``)."""


class DashboardApp(App[JobsReport]):
    """Live screen and leaderboard (Textual modes), driven by the pipeline's messages."""

    CSS_PATH = Path(__file__).with_name("dashboard.tcss")  # absolute: subclasses live elsewhere
    TITLE = "streameval"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("l", "show_live", "Live"),
        Binding("t", "show_leaderboard", "Leaderboard"),
        Binding("c", "show_cases", "Cases"),
    ]

    def __init__(
        self,
        jobs: list[EpisodeJob],
        config: PipelineConfig | None = None,
        observers: list[EpisodeObserver] | None = None,
        options: DashboardOptions | None = None,
        stop: StopMonitor | None = None,
        closing: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__()
        self.options = options or DashboardOptions()
        self.config = config or PipelineConfig()
        self.title = self.options.title
        cases = [(job.case.set, job.case.name) if job.case is not None else None for job in jobs]
        self.model = DashboardModel.for_jobs([job.name for job in jobs], cases)
        self.model.cases = CaseBoard.for_cases(cases, [job.results_dir for job in jobs])
        self.model.stop_rule = stop
        self.runner = JobRunner(
            jobs,
            self.config,
            list(observers or []),
            self.post_message,
            None if stop is None else stop.check,
            closing,
        )
        self.live = LiveScreen(
            self.model,
            self.config.queue_size,
            self.options.clock,
            self.options.repaint_interval_s,
        )
        self.leaderboard = LeaderboardScreen(
            self.model, self.options.leaderboard_dirs, self.options.exclusion
        )
        self.cases = CasesScreen(self.case_runs, self.options.reload_interval_s)
        self.pipeline: Worker[JobsReport] | None = None
        self.failure: BaseException | None = None

    @property
    def report(self) -> JobsReport:
        return self.runner.report

    def observer_for(self, job: int) -> DashboardObserver:
        """An observer posting as job ``job``: how tests and screenshots feed the App."""
        return DashboardObserver(self.post_message, job)

    def on_mount(self) -> None:
        # SIGTERM (a scheduler or `kill`) stops the run as `q` does: the episode in progress
        # is finalized as incomplete with its scores.json, then the app exits. Textual owns
        # the loop here, so the handler of the plain path (interrupts.py) is not in place.
        if self.options.catch_sigterm:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop = asyncio.get_running_loop()
                loop.add_signal_handler(signal.SIGTERM, self.stop_on_sigterm)
        self.add_mode("live", lambda: self.live)
        self.add_mode("leaderboard", lambda: self.leaderboard)
        self.add_mode("cases", lambda: self.cases)
        self.switch_mode(self.options.start_mode)
        if self.options.autostart:
            self.pipeline = self.run_worker(
                self.runner.run(), name=PIPELINE_WORKER, exit_on_error=False
            )

    # -- pipeline messages ----------------------------------------------------------------

    def _show_log(self, line: LogLine | None) -> None:
        if line is not None:
            self.live.add_log(line)

    def case_runs(self) -> list[tuple[str, CaseProgress]]:
        """What the case-set view shows: this command's case run, then those on disk (titled
        by model; by model and folder when two runs share a model)."""
        runs: list[tuple[str, CaseProgress]] = []
        live = self.model.case_progress()
        if live is not None:
            models = {ep.info.model for ep in self.model.episodes if ep.info is not None}
            runs.append((", ".join(sorted(models)) or "this run", live))
        on_disk: list[tuple[str, Path, CaseProgress]] = []
        for path in self.options.case_runs:
            try:
                run = read_case_run(path)
                progress = progress_of(run)
            except BadInputError as exc:
                self._show_log(self.model.add_log(LogLevel.ERROR, str(exc)))
                continue
            on_disk.append((run.model, path.parent, progress))
        names = [model for model, _, _ in on_disk]
        for model, folder, progress in on_disk:
            runs.append((model if names.count(model) == 1 else f"{model} ({folder})", progress))
        return runs

    def on_episode_started(self, message: EpisodeStarted) -> None:
        self.model.start(message.job, message.info, message.trace, self.options.clock())
        self.live.episode_changed(message.job, urgent=True)
        self.cases.changed()

    def on_episode_progressed(self, message: EpisodeProgressed) -> None:
        self._show_log(self.model.progress(message.job, message.progress, self.options.clock()))
        self.live.episode_changed(message.job)

    def on_episode_errored(self, message: EpisodeErrored) -> None:
        self._show_log(self.model.error(message.job, message.text))
        self.live.episode_changed(message.job, urgent=True)

    def on_episode_warned(self, message: EpisodeWarned) -> None:
        self._show_log(self.model.add_log(LogLevel.WARNING, message.text, message.job))
        self.live.episode_changed(message.job, urgent=True)

    def on_episode_ended(self, message: EpisodeEnded) -> None:
        for line in self.model.end(message.job, message.outcome, self.options.clock()):
            self._show_log(line)
        self.live.episode_changed(message.job, urgent=True)
        self.leaderboard.results_changed()
        self.cases.changed()

    def on_pipeline_finished(self, message: PipelineFinished) -> None:
        self.model.finish(message.stopped or self.runner.rule_met)
        if self.runner.rule_met and self.model.stop_rule is not None:
            self.model.rule_met = True
            left = sum(1 for ep in self.model.episodes if ep.status is JobStatus.SKIPPED)
            self._show_log(
                self.model.add_log(
                    LogLevel.INFO, f"{self.model.stop_rule.summary()}; {left} case(s) not run"
                )
            )
            self.cases.changed()
        if message.failure is not None:
            self.model.failure = message.failure
            self._show_log(
                self.model.add_log(LogLevel.ERROR, f"pipeline failed: {message.failure}")
            )
        elif not message.stopped and not self.runner.rule_met:
            self._show_log(self.model.add_log(LogLevel.INFO, "all episodes done"))
        self.live.repaint_all()
        if self.model.stopping or not self.options.stay_open:
            self.exit(message.report)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self.pipeline:
            return
        if event.state is WorkerState.SUCCESS:
            self.post_message(PipelineFinished(self.report, stopped=False))
        elif event.state is WorkerState.CANCELLED:
            self.post_message(PipelineFinished(self.report, stopped=True))
        elif event.state is WorkerState.ERROR:
            self.failure = event.worker.error
            self.post_message(
                PipelineFinished(
                    self.report, stopped=self.model.stopping, failure=repr(event.worker.error)
                )
            )

    def stop_on_sigterm(self) -> None:
        """SIGTERM (a scheduler or ``kill``): stop as ``q`` does."""
        self.run_worker(self.action_quit(), name="sigterm", exit_on_error=False)

    # -- user actions ---------------------------------------------------------------------

    async def action_quit(self) -> None:
        """Stop cleanly: finalize the episode in progress (incomplete), then exit."""
        if self.pipeline is None or self.pipeline.state not in (
            WorkerState.PENDING,
            WorkerState.RUNNING,
        ):
            self.exit(self.report)
            return
        if self.model.stopping:
            # Asked twice: leave now. The worker is cancelled at shutdown and still
            # finalizes the episode while the event loop closes (the report is the same
            # object, so it still receives the outcome).
            self.exit(self.report)
            return
        self.model.stopping = True
        self.runner.stopping = True
        self.runner.report.stopped = True
        self.live.repaint_all()
        self.pipeline.cancel()

    def action_show_live(self) -> None:
        self.switch_mode("live")

    def action_show_leaderboard(self) -> None:
        self.switch_mode("leaderboard")

    def action_show_cases(self) -> None:
        self.switch_mode("cases")


def run_dashboard(
    jobs: list[EpisodeJob],
    config: PipelineConfig,
    observers: list[EpisodeObserver],
    options: DashboardOptions | None = None,
    *,
    headless: bool = False,
    stop: StopMonitor | None = None,
    closing: Callable[[], Awaitable[None]] | None = None,
) -> JobsReport:
    """Run ``jobs`` under the dashboard; return the report when the user quits (or, with
    ``stay_open=False``, after the last episode).

    ``observers`` get every episode exactly as in a headless run (results log, recorders).
    An episode stopped with ``q`` is in the report, incomplete. A pipeline that crashed
    re-raises its exception here, so the command fails as it would without the dashboard.
    ``stop``: the run's ``--stop-when`` rule, checked before each case (no new case starts
    once it is met) and shown on the case-set view beside each column it watches.
    ``closing`` is awaited on the dashboard's loop once the jobs are over (the MQTT scores
    publisher's last messages).
    """
    app = DashboardApp(jobs, config, observers, options, stop, closing)
    result = app.run(headless=headless)
    if app.failure is not None:
        raise app.failure
    return result if result is not None else app.report


async def arun_dashboard(
    jobs: list[EpisodeJob],
    config: PipelineConfig,
    observers: list[EpisodeObserver],
    options: DashboardOptions | None = None,
    *,
    headless: bool = False,
    stop: StopMonitor | None = None,
    sigterm: SigtermCancels | None = None,
) -> JobsReport:
    """``run_dashboard`` on the running event loop (``runs.run``'s: the run's MQTT publisher
    and evidence live on it too). ``sigterm``: the run's SIGTERM handler, routed to the App
    (stop as ``q`` does) while it runs. Returns once the episode a second ``q`` left behind
    has been finalized too, so the report holds it."""
    options = replace(options or DashboardOptions(), catch_sigterm=sigterm is None)
    app = DashboardApp(jobs, config, observers, options, stop)
    if sigterm is not None:
        sigterm.redirect(app.stop_on_sigterm)
    try:
        result = await app.run_async(headless=headless)
        if app.pipeline is not None:
            with contextlib.suppress(WorkerError):  # cancelled or failed: said below
                await app.pipeline.wait()
    finally:
        if sigterm is not None:
            sigterm.redirect(None)
    if app.failure is not None:
        raise app.failure
    return result if result is not None else app.report

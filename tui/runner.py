"""Runs the command's jobs inside the dashboard's event loop, one after the other.

The same ``streameval.runs.jobs.run_job`` as the headless path, so the dashboard shows exactly what
``--no-tui`` would write. Stopping (``q``) cancels the running episode: ``run_episode``
finalizes it as incomplete, writes its scores.json, calls ``on_end`` and re-raises
``CancelledError``; the outcome is then taken from the job's ``DashboardObserver`` so the
report still lists it. A ``--stop-when`` rule is asked before each job, as ``run_jobs`` asks it:
once met, no new job starts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from streameval.tui.observer import DashboardObserver, Post

from streameval.core.observers import EpisodeObserver
from streameval.engine.config import PipelineConfig
from streameval.errors import EpisodeNotStarted
from streameval.runs.jobs import EpisodeJob, JobsReport, StopCheck, run_job, should_stop


class JobRunner:
    """The pipeline side of the dashboard: jobs in order, one ``DashboardObserver`` each."""

    def __init__(
        self,
        jobs: list[EpisodeJob],
        config: PipelineConfig,
        observers: list[EpisodeObserver],
        post: Post,
        stop: StopCheck | None = None,
        closing: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.jobs = jobs
        # awaited once the jobs are over (done, stopped or failed), on this loop: an observer
        # with work of its own on it (the MQTT scores publisher's queue) finishes it here,
        # before Textual closes the loop
        self.closing = closing
        self.stop = stop  # --stop-when: asked before each job, as the headless path does
        self.rule_met = False
        self.config = config
        self.observers = observers
        self.post = post
        self.report = JobsReport()
        self.stopping = False
        self.current: DashboardObserver | None = None

    async def run(self) -> JobsReport:
        """Run every job; returns the report (also on ``self.report``).

        Raises ``CancelledError`` when stopped, after the running episode was finalized.
        ``closing`` is awaited at the end in every case.
        """
        try:
            return await self._run_all()
        finally:
            if self.closing is not None:
                await self.closing()

    async def _run_all(self) -> JobsReport:
        for index, job in enumerate(self.jobs):
            if self.stopping:
                break
            if await should_stop(self.stop):
                self.rule_met = True
                break
            dashboard = DashboardObserver(self.post, index)
            self.current = dashboard
            try:
                await run_job(job, self.config, [*self.observers, dashboard], self.report)
            except asyncio.CancelledError:
                self._keep_outcome(dashboard)
                raise
            except EpisodeNotStarted:
                # a source stopped by the user before it sent EpisodeStart ends this way:
                # nothing to finalize then; any other failure is re-raised as it is.
                if not self.stopping:
                    raise
                raise asyncio.CancelledError from None
            finally:
                self.current = None
        return self.report

    def _keep_outcome(self, dashboard: DashboardObserver) -> None:
        outcome = dashboard.outcome
        if outcome is not None and all(o is not outcome for o in self.report.outcomes):
            self.report.outcomes.append(outcome)

"""A command's episodes as jobs: how to open each source and where its results go.

The CLI builds jobs; either the plain runner below or the dashboard runs them, with the same
observers, so what a headless run writes and what the dashboard shows come from one path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from streameval.core.events import ErrorEvent
from streameval.core.observers import EpisodeObserver, EpisodeOutcome
from streameval.core.source import Source
from streameval.engine.config import PipelineConfig
from streameval.errors import BadInputError

log = logging.getLogger(__name__)

BUSY_WAIT_S = 60.0
"""How long an episode asks again while the server says another session still holds it: a
single-session server is free once its in-flight chunk is done (seconds, on a real model)."""
if TYPE_CHECKING:
    from streameval.cases.model import Case
    from streameval.scale.tasks import ReplayTask


@dataclass
class EpisodeJob:
    """One episode to evaluate.

    ``open_source`` is called when the job starts (not before), so a model or a video file is
    opened only when its turn comes; it may raise ``BadInputError``. ``task``, when set, is
    the same episode as a picklable description, for running it in another process (Ray).
    ``case``, when set, is the benchmark case the episode runs (``streameval.cases``): its
    image, caption and intrinsics are sent to the model as its source's conditioning.
    """

    name: str
    open_source: Callable[[], Source]
    results_dir: Path
    observers: list[EpisodeObserver] = field(default_factory=list)
    task: ReplayTask | None = None
    case: Case | None = None


class _LastOutcome(EpisodeObserver):
    def __init__(self) -> None:
        self.outcome: EpisodeOutcome | None = None

    def on_end(self, outcome: EpisodeOutcome) -> None:
        self.outcome = outcome


@dataclass
class JobsReport:
    outcomes: list[EpisodeOutcome] = field(default_factory=list)
    bad_input: list[str] = field(default_factory=list)
    # input defects of episodes that still ran (an unusable sidecar): reported, exit 2
    input_problems: list[str] = field(default_factory=list)
    stopped: bool = False  # the user stopped the run (``q``, Ctrl-C): not a bad input

    @property
    def all_complete(self) -> bool:
        return not self.bad_input and all(o.complete for o in self.outcomes)


async def run_job(
    job: EpisodeJob,
    config: PipelineConfig,
    observers: list[EpisodeObserver],
    report: JobsReport,
) -> None:
    """Run one job; bad input is reported to the observers and the report, never raised."""
    log.debug("job %s: opening its source (results in %s)", job.name, job.results_dir)
    try:
        source = await _open_when_free(job)  # closed there when it fails
    except BadInputError as exc:
        log.debug("job %s: bad input: %s", job.name, exc)
        report.bad_input.append(str(exc))
        for o in observers:
            o.on_error(ErrorEvent(str(exc), fatal=True, source="input"))
        return
    from streameval.engine.pipeline import run_episode  # OpenCV and the backends: on use

    ended = _LastOutcome()
    try:
        outcome = await run_episode(
            source,
            config=config,
            results_dir=job.results_dir,
            observers=[*observers, *job.observers, ended],
        )
    except asyncio.CancelledError:
        # run_episode finalized the episode (incomplete) before re-raising: keep its outcome
        if ended.outcome is not None:
            report.outcomes.append(ended.outcome)
        raise
    log.debug(
        "job %s: %s, %d frames, %s",
        job.name,
        "complete" if outcome.complete else "incomplete",
        outcome.frames,
        outcome.results_dir,
    )
    report.outcomes.append(outcome)


async def _connect(source: Source) -> None:
    connect = getattr(source, "connect", None)
    if connect is not None:  # a network source: an unreachable server is bad input
        await connect()


async def _open_when_free(job: EpisodeJob) -> Source:
    """Open and connect the job's source; while the server refuses the session because the
    one before still holds it (``refused_busy``: a single-session server finishing the chunk
    it was generating when the last episode closed), ask again, for up to ``BUSY_WAIT_S``.
    Then the refusal stands: that episode is incomplete with the server's words."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BUSY_WAIT_S
    pause = 0.5
    while True:
        source = job.open_source()
        try:
            await _connect(source)
        except BaseException:
            with contextlib.suppress(Exception):
                await source.close()
            raise
        busy = getattr(source, "refused_busy", lambda: None)()
        if busy is None or loop.time() + pause > deadline:
            return source
        log.info("job %s: the server is busy (%s); asking again in %.1f s", job.name, busy, pause)
        with contextlib.suppress(Exception):
            await source.close()
        await asyncio.sleep(pause)
        pause = min(2 * pause, 4.0)


StopCheck = Callable[[], bool]
"""Asked before each job starts (in a worker thread: it may read the results folder); True
ends the run there, cleanly: no new job starts (``--stop-when``)."""


async def should_stop(stop: StopCheck | None) -> bool:
    """``stop()`` off the event loop (other sessions keep streaming meanwhile); False for None."""
    return stop is not None and await asyncio.to_thread(stop)


async def run_jobs(
    jobs: list[EpisodeJob],
    config: PipelineConfig,
    observers: list[EpisodeObserver],
    stop: StopCheck | None = None,
) -> JobsReport:
    """Run the jobs one after the other (two cores: one episode already uses both), until
    ``stop`` says the run may end."""
    report = JobsReport()
    for job in jobs:
        if await should_stop(stop):
            break
        await run_job(job, config, observers, report)
    return report

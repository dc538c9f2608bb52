"""``streameval dashboard --mqtt URL``: the live screen of evaluations running elsewhere.

The same App as a local run, without a pipeline: live score updates from the broker
(``transports/mqtt/remote_watch.py``) are turned into the observer calls a local pipeline would
make (start, progress, error, warning, end), one dashboard job per remote episode. Results travel
with their status, reason and scalar details and the final message carries the outcome, so
the screen after the episode is the local one: final scores, ``✓``, the same frame count
(docs/serve-formats.md#watch-from-elsewhere). Remote metrics are marked ``remote`` in their
details. A benchmark case's updates name the case and the run's sets, so the case-set view
(``c``) shows the remote run's progress and column bands as a local one does: the final
message carries each result's scored segment values and the case the run's most keys a case
holds, so the bands are the table's (cases ended before the watcher joined are not known to
it). A run with a ``--stop-when`` rule sends the rule's state as the evaluator's monitor says
it (``RemoteStop``): each column's state beside its band and the rule's line, as locally.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass

from streameval.protocol.schedule import Schedule
from streameval.protocol.stop_state import WireStop
from streameval.protocol.wire import ScoresUpdate, WireMetric
from streameval.tui.app import DashboardApp, DashboardOptions
from streameval.tui.cases import CaseBoard
from streameval.tui.observer import DashboardObserver
from streameval.tui.state import EpisodeState

from streameval.constants import DEFAULT_FPS
from streameval.core.episode.scores import EpisodeScores
from streameval.core.events import EpisodeInfo, ErrorEvent
from streameval.core.metric_result import MetricResult
from streameval.core.observers import EpisodeOutcome, Progress
from streameval.errors import redact_url
from streameval.leaderboard.intervals import ColumnInterval
from streameval.metrics.stop_rule import rule_summary
from streameval.transports.mqtt.remote_watch import metric_results, watch_scores


@dataclass(frozen=True, slots=True)
class RemoteStop:
    """A remote case run's ``--stop-when`` rule as its latest scores message said it: read
    by the case-set view as a local run's monitor is (``tui.cases.StopView``)."""

    wire: WireStop

    def column_states(self, intervals: Mapping[str, ColumnInterval]) -> Mapping[str, str]:
        """The evaluator's states: computed there over the same finished cases."""
        return self.wire.states

    def summary(self) -> str:
        return rule_summary(self.wire.rule, self.wire.met, self.wire.after)


@dataclass
class RemoteJob:
    """One remote episode on this dashboard and how far its messages got: progress that is
    not newer than ``frames_done`` (a repeat, or one overtaken) is not applied twice."""

    job: int
    observer: DashboardObserver
    info: EpisodeInfo
    frames_done: int = 0
    ended: bool = False
    wire: tuple[dict[str, WireMetric], dict[str, float | None]] | None = None

    def provisional(self, update: ScoresUpdate) -> dict[str, MetricResult] | None:
        """New provisional scores, or None when they did not change since the last message
        (as a local pipeline only hands them over when it recomputed them)."""
        wire = (update.results, update.metrics)
        if not (update.results or update.metrics) or wire == self.wire:
            return None
        self.wire = wire
        return metric_results(update)


def frames_done(update: ScoresUpdate) -> int:
    """Perceived frames after this update; 0 for the start message (no frame yet). An older
    evaluator does not send the count: its frame index + 1, its start message has no key."""
    if update.frames_done is not None:
        return update.frames_done
    return 0 if update.key == "-" else update.frame + 1


def outcome_of(info: EpisodeInfo, update: ScoresUpdate) -> EpisodeOutcome:
    """The final message as the outcome a local pipeline hands its observers (no results
    directory: that stays with the evaluator)."""
    return EpisodeOutcome(
        info=info,
        scores=EpisodeScores(metric_results(update), {}),
        results_dir=None,
        complete=bool(update.complete),
        frames=update.frame if update.frames is None else update.frames,
        interactivity=dict(update.interactivity),
    )


class RemoteDashboardApp(DashboardApp):
    def __init__(self, url: str, options: DashboardOptions | None = None) -> None:
        base = options or DashboardOptions()
        super().__init__(
            [],
            options=DashboardOptions(
                stay_open=True,
                clock=base.clock,
                repaint_interval_s=base.repaint_interval_s,
                autostart=False,
                title=f"streameval — watching {redact_url(url)}",
            ),
        )
        self.url = url
        self.jobs: dict[tuple[str, str], RemoteJob] = {}
        self.subscribed = asyncio.Event()  # set once the broker took the subscription

    def on_mount(self) -> None:
        # Textual also runs DashboardApp.on_mount (handlers run along the MRO): modes are set
        self.run_worker(self._watch(), name="remote", exit_on_error=False)

    async def _watch(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await watch_scores(self.url, self.apply, self.subscribed.set)

    def _start(self, session: str, update: ScoresUpdate) -> RemoteJob | None:
        if not update.keys or len(update.boundaries) != len(update.keys) + 1:
            return None  # joined mid-episode without its schedule: wait for the next one
        job = len(self.model.episodes)
        state = EpisodeState(job, f"{session}/{update.episode}")
        if update.case is not None:
            state.case = (update.case.set, update.case.name)
        self.model.episodes.append(state)
        fps = update.episode_fps or DEFAULT_FPS
        info = EpisodeInfo(
            episode=update.episode,
            model=update.model,
            suite=update.suite,
            fps=fps,
            schedule=Schedule(update.keys, fps, update.boundaries),
            source=f"{redact_url(self.url)} ({session})",
        )
        remote = RemoteJob(job, self.observer_for(job), info)
        self.jobs[(session, update.episode)] = remote
        remote.observer.on_start(info)
        return remote

    def _learn_sets(self, update: ScoresUpdate) -> None:
        """A case's update: the case-set view starts, and takes the run's set sizes and its
        stop rule's state."""
        if update.case is None:
            return
        if self.model.cases is None:
            self.model.cases = CaseBoard({})
        if update.case.sets and update.case.sets != self.model.cases.set_totals:
            self.model.cases.set_totals = dict(update.case.sets)
            self.model.forget_progress()
        keys = update.case.max_keys
        if keys is not None and keys != self.model.cases.max_keys:
            self.model.cases.max_keys = keys
            self.model.forget_progress()
        known = self.model.stop_rule
        if update.stop is not None and (
            not isinstance(known, RemoteStop) or known.wire != update.stop
        ):
            self.model.stop_rule = RemoteStop(update.stop)
            self.model.forget_progress()
            self.cases.changed()  # also when no case ends with it (a repeated end)

    def apply(self, session: str, update: ScoresUpdate) -> None:
        """One remote update → the observer call a local pipeline would have made."""
        self._learn_sets(update)
        remote = self.jobs.get((session, update.episode))
        if remote is not None and remote.ended:
            if update.final:
                return  # the same end once more
            remote = None  # the episode runs again: a job of its own, as locally
        if remote is None:
            remote = self._start(session, update)
            if remote is None:
                return
        if update.error:
            remote.observer.on_error(ErrorEvent(update.error, source="remote"))
            return
        if update.warning:
            remote.observer.on_warning(update.warning)
            return
        done = frames_done(update)
        if done > remote.frames_done:
            # the final message repeats the last perceived frame: applied only if it was lost
            remote.frames_done = done
            if update.received is not None:  # the evaluator's count, not ours
                remote.observer.trace.frames_received = update.received
            remote.observer.on_progress(
                Progress(
                    info=remote.info,
                    frame=update.frame,
                    key=update.key,
                    sx=update.sx,
                    srad=update.srad,
                    frames_done=done,
                    frames_total=remote.info.schedule.total_frames,
                    fps=update.fps,
                    queue_depth=update.queue_depth or 0,
                    dropped=update.dropped,
                    provisional=None if update.final else remote.provisional(update),
                )
            )
        if update.final:
            remote.ended = True
            remote.observer.on_end(outcome_of(remote.info, update))

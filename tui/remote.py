"""``streameval dashboard --mqtt URL``: the live screen of evaluations running elsewhere.

The same App as a local run, without a pipeline: live score updates from the broker
(``transports/remote_watch.py``) are turned into the observer calls a local pipeline would
make (start, progress, error), one dashboard job per remote episode. Remote metrics carry
only their normalized value (the publisher sends no raw values), marked ``remote`` in their
details.
"""

from __future__ import annotations

import asyncio
import contextlib

from streameval.protocol.schedule import Schedule
from streameval.protocol.wire import ScoresUpdate
from streameval.tui.app import DashboardApp, DashboardOptions
from streameval.tui.observer import DashboardObserver
from streameval.tui.state import EpisodeState

from streameval.core.events import EpisodeInfo, ErrorEvent
from streameval.core.metric_result import MetricResult
from streameval.core.observers import Progress
from streameval.errors import redact_url
from streameval.transports.remote_watch import watch_scores


def _metrics(update: ScoresUpdate) -> dict[str, MetricResult]:
    out: dict[str, MetricResult] = {}
    for name, value in update.metrics.items():
        if value is None:
            out[name] = MetricResult.missing("not reported by the remote evaluator")
        else:
            out[name] = MetricResult(None, value, "official", None, {"remote": True})
    return out


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
        self.jobs: dict[tuple[str, str], tuple[int, DashboardObserver, EpisodeInfo]] = {}

    def on_mount(self) -> None:
        # Textual also runs DashboardApp.on_mount (handlers run along the MRO): modes are set
        self.run_worker(self._watch(), name="remote", exit_on_error=False)

    async def _watch(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await watch_scores(self.url, self.apply)

    def apply(self, session: str, update: ScoresUpdate) -> None:
        """One remote update → the observer call a local pipeline would have made."""
        key = (session, update.episode)
        if key not in self.jobs:
            if not update.keys or len(update.boundaries) != len(update.keys) + 1:
                return  # joined mid-episode without its schedule: wait for the next one
            job = len(self.model.episodes)
            self.model.episodes.append(EpisodeState(job, f"{session}/{update.episode}"))
            fps = update.episode_fps or 16.0
            info = EpisodeInfo(
                episode=update.episode,
                model=update.model,
                suite=update.suite,
                fps=fps,
                schedule=Schedule(update.keys, fps, update.boundaries),
                source=f"{redact_url(self.url)} ({session})",
            )
            observer = self.observer_for(job)
            self.jobs[key] = (job, observer, info)
            observer.on_start(info)
        job, observer, info = self.jobs[key]
        if update.error:
            observer.on_error(ErrorEvent(update.error, source="remote"))
            return
        observer.on_progress(
            Progress(
                info=info,
                frame=update.frame,
                key=update.key,
                sx=update.sx,
                srad=update.srad,
                frames_done=update.frame + 1,
                frames_total=info.schedule.total_frames,
                fps=update.fps,
                queue_depth=0,
                dropped=update.dropped,
                provisional=_metrics(update) if update.metrics else None,
            )
        )

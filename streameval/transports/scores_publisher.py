"""Live scores on MQTT (``streameval/SESSION/scores``) for ``dashboard --mqtt`` elsewhere.

An observer, so it sees exactly what the local dashboard sees; its hooks only put a message
in a bounded queue (a slow broker never slows the evaluation: when the queue is full the
oldest progress update goes, control updates are kept) and one task publishes.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from typing import Any

from streameval.core.events import EpisodeInfo, ErrorEvent
from streameval.core.observers import EpisodeObserver, EpisodeOutcome, Progress
from streameval.protocol.wire import ScoresUpdate, encode
from streameval.transports.mqtt_url import client_kwargs, connect_problem, parse_mqtt_url

QUEUE_SIZE = 64


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


class MqttScoresPublisher(EpisodeObserver):
    def __init__(self, url: str) -> None:
        self.target = parse_mqtt_url(url)
        self.topic = self.target.topic("scores")
        self.info: EpisodeInfo | None = None
        self.queue: asyncio.Queue[ScoresUpdate | None] = asyncio.Queue(QUEUE_SIZE)
        self.task: asyncio.Task[None] | None = None
        self.failure: str | None = None
        self._metrics: dict[str, float | None] = {}

    def _update(self, frame: int, key: str, fps: float, dropped: int, **kw: Any) -> ScoresUpdate:
        assert self.info is not None
        return ScoresUpdate(
            episode=self.info.episode,
            model=self.info.model,
            frame=frame,
            key=key,
            fps=fps,
            dropped=dropped,
            metrics=dict(self._metrics),
            suite=self.info.suite,
            keys=self.info.schedule.keys,
            boundaries=self.info.schedule.boundaries,
            episode_fps=self.info.fps,
            **kw,
        )

    def _put(self, update: ScoresUpdate | None, droppable: bool = False) -> None:
        if self.queue.full():
            if droppable:
                return
            with contextlib.suppress(asyncio.QueueEmpty):
                self.queue.get_nowait()
        self.queue.put_nowait(update)

    def on_start(self, info: EpisodeInfo) -> None:
        self.info = info
        self._metrics = {}
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._publish())
        self._put(self._update(0, "-", 0.0, 0))

    def on_progress(self, progress: Progress) -> None:
        if self.info is None:
            return
        if progress.provisional is not None:
            self._metrics = {k: m.normalized for k, m in progress.provisional.items()}
        update = self._update(
            progress.frame,
            progress.key,
            progress.fps,
            progress.dropped,
            sx=_finite(progress.sx),
            srad=_finite(progress.srad),
        )
        self._put(update, droppable=True)

    def on_error(self, error: ErrorEvent) -> None:
        if self.info is not None:
            self._put(self._update(0, "-", 0.0, 0, error=error.message))

    def on_end(self, outcome: EpisodeOutcome) -> None:
        if self.info is None:
            return
        self._metrics = {k: m.normalized for k, m in outcome.scores.metrics.items()}
        self._put(self._update(outcome.frames, "-", 0.0, 0, complete=outcome.complete, final=True))

    async def close(self) -> None:
        """Publish what is queued, then disconnect."""
        if self.task is None:
            return
        self._put(None)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.task, 5.0)
        self.task = None

    async def _publish(self) -> None:
        import aiomqtt

        try:
            async with aiomqtt.Client(**client_kwargs(self.target)) as client:  # type: ignore[arg-type]
                while True:
                    update = await self.queue.get()
                    if update is None:
                        return
                    await client.publish(self.topic, encode(update), qos=0)
        except aiomqtt.MqttError as exc:
            self.failure = (
                f"{self.target.display}: live scores not published: {connect_problem(exc)}"
            )

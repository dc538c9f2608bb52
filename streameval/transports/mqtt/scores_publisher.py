"""Live scores on MQTT (``streameval/SESSION/scores``) for ``dashboard --mqtt`` elsewhere.

An observer, so it sees exactly what the local dashboard sees; its hooks only put a message
in a bounded queue (a slow broker never slows the evaluation: when the queue is full a new
progress update is left out, the start, errors and the final scores are kept) and one task
publishes. Every result travels with its status and reason, and the final message repeats
the last perceived frame, so a watcher ends on exactly the local screen
(docs/serve-formats.md#watch-from-elsewhere).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from streameval.core.events import EpisodeInfo, ErrorEvent, FrameEvent
from streameval.core.metric_result import MetricResult
from streameval.core.observers import EpisodeObserver, EpisodeOutcome, Progress
from streameval.protocol.wire import MAX_SCALARS, Scalar, ScoresUpdate, WireMetric, encode
from streameval.transports.mqtt.url import client_kwargs, connect_problem, parse_mqtt_url

QUEUE_SIZE = 64
MAX_TEXT = 1000
"""Longest string a detail carries (a reason or a backend name is far shorter)."""


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def wire_scalar(value: object) -> tuple[bool, Scalar]:
    """``(True, plain value)`` for a value a message can carry (numpy scalars become Python
    ones, msgpack packs no numpy type), ``(False, None)`` for a list, an array, a map."""
    if value is None or isinstance(value, bool | str):
        return True, value[:MAX_TEXT] if isinstance(value, str) else value
    if isinstance(value, np.bool_):
        return True, bool(value)
    if isinstance(value, int | np.integer):
        return True, int(value)
    if isinstance(value, float | np.floating):
        return True, float(value)
    return False, None


def wire_scalars(values: Mapping[str, object]) -> dict[str, Scalar]:
    """The plain entries of ``values`` (at most ``MAX_SCALARS``): what the dashboard reads of
    details and the interactivity block are such values, per-pair lists stay home."""
    out: dict[str, Scalar] = {}
    for name, value in values.items():
        ok, plain = wire_scalar(value)
        if ok and len(out) < MAX_SCALARS:
            out[str(name)] = plain
    return out


def wire_results(metrics: Mapping[str, MetricResult]) -> dict[str, WireMetric]:
    """Every result with its status, reason and scalar details, as a scores message holds it."""
    return {
        name: WireMetric(
            raw=_finite(None if m.raw is None else float(m.raw)),
            normalized=_finite(None if m.normalized is None else float(m.normalized)),
            status=m.status,
            reason=m.reason,
            details=wire_scalars(m.details),
        )
        for name, m in metrics.items()
    }


def _normalized(metrics: Mapping[str, MetricResult]) -> dict[str, float | None]:
    return {
        k: _finite(None if m.normalized is None else float(m.normalized))
        for k, m in metrics.items()
    }


class MqttScoresPublisher(EpisodeObserver):
    def __init__(self, url: str) -> None:
        self.target = parse_mqtt_url(url)
        self.topic = self.target.topic("scores")
        self.info: EpisodeInfo | None = None
        self.queue: asyncio.Queue[ScoresUpdate | None] = asyncio.Queue(QUEUE_SIZE)
        self.task: asyncio.Task[None] | None = None
        self.failure: str | None = None
        self._metrics: dict[str, float | None] = {}
        # converted once per provisional update, then shared by every message until the next
        self._results: dict[str, WireMetric] = {}
        self._last: Progress | None = None
        self._received = 0  # frames received, as the local Throughput counts them

    def _update(self, frame: int, key: str, fps: float, dropped: int, **kw: Any) -> ScoresUpdate:
        assert self.info is not None
        return ScoresUpdate(
            episode=self.info.episode,
            model=self.info.model,
            frame=frame,
            key=key,
            fps=fps,
            dropped=dropped,
            metrics=self._metrics,
            results=self._results,
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
        self._metrics, self._results, self._last = {}, {}, None
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._publish())
        self._put(self._update(0, "-", 0.0, 0, frames_done=0))

    def _progress_update(self, progress: Progress | None, **kw: Any) -> ScoresUpdate:
        if progress is None:  # ended before its first perceived frame
            return self._update(0, "-", 0.0, 0, frames_done=0, **kw)
        return self._update(
            progress.frame,
            progress.key,
            progress.fps,
            progress.dropped,
            sx=_finite(progress.sx),
            srad=_finite(progress.srad),
            frames_done=progress.frames_done,
            queue_depth=progress.queue_depth,
            received=self._received,
            **kw,
        )

    def on_frame(self, event: FrameEvent) -> None:
        self._received += 1

    def on_progress(self, progress: Progress) -> None:
        if self.info is None:
            return
        self._last = progress
        if progress.provisional is not None:
            self._metrics = _normalized(progress.provisional)
            self._results = wire_results(progress.provisional)
        self._put(self._progress_update(progress), droppable=True)

    def on_error(self, error: ErrorEvent) -> None:
        if self.info is not None:
            self._put(self._update(0, "-", 0.0, 0, error=error.message))

    def on_warning(self, message: str) -> None:
        if self.info is not None:
            self._put(self._update(0, "-", 0.0, 0, warning=message))

    def on_end(self, outcome: EpisodeOutcome) -> None:
        if self.info is None:
            return
        self._metrics = _normalized(outcome.scores.metrics)
        self._results = wire_results(outcome.scores.metrics)
        self._put(
            self._progress_update(
                self._last,
                frames=outcome.frames,
                complete=outcome.complete,
                final=True,
                interactivity=wire_scalars(outcome.interactivity),
            )
        )

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

"""Live scores on MQTT (``streameval/SESSION/scores``) for ``dashboard --mqtt`` elsewhere.

An observer, so it sees exactly what the local dashboard sees; its hooks only put a message
in a bounded queue (a slow broker never slows the evaluation: when the queue is full a new
progress update is left out, the start, errors and the final scores are kept) and one task
publishes. Every result travels with its status and reason, and the final message repeats
the last perceived frame, so a watcher ends on exactly the local screen
(docs/serve-formats.md#watch-from-elsewhere). A benchmark case's episode names its case and,
from the end of the run's first case on (when ``cases.json`` is on disk beside the results),
every set's number of cases and the most keys a case holds; its final message carries each
result's scored segment values (what the table pools): the watcher's case-set view is the
local one. A case run with a ``--stop-when`` rule: its start and final messages carry the
rule's state as the evaluator's own dashboard shows it (``stop``, given the run's monitor),
and when the run ends with a state the last message did not carry, the last final message
is sent once more with it (a watcher takes it, then ignores the repeated end).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from streameval.core.events import EpisodeInfo, ErrorEvent, FrameEvent
from streameval.core.metric_result import MetricResult
from streameval.core.observers import EpisodeObserver, EpisodeOutcome, Progress
from streameval.protocol.stop_state import WireStop
from streameval.protocol.wire import (
    MAX_SCALARS,
    MAX_SEGMENTS,
    Scalar,
    ScoresUpdate,
    WireCase,
    WireMetric,
    encode,
)
from streameval.replay.layout import CASE_RUN
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


def wire_results(metrics: Mapping[str, MetricResult], final: bool = False) -> dict[str, WireMetric]:
    """Every result with its status, reason and scalar details, as a scores message holds it;
    ``final``: with its scored segment values too (``scored_values``)."""
    return {
        name: WireMetric(
            raw=_finite(None if m.raw is None else float(m.raw)),
            normalized=_finite(None if m.normalized is None else float(m.normalized)),
            status=m.status,
            reason=m.reason,
            details=wire_scalars(m.details),
            scored=scored_values(m.details) if final else None,
        )
        for name, m in metrics.items()
    }


def scored_values(details: Mapping[str, object]) -> tuple[float, ...] | None:
    """The values of the scored entries of ``details["segments"]`` in order — what the table
    pools of a control column (``metrics.aggregation``) — or None when there is no list,
    or one the table could not use as it is (an entry that is not an object, a scored one
    without a finite value): a watcher then falls back as the table does."""
    segments = details.get("segments")
    if not isinstance(segments, list) or len(segments) > MAX_SEGMENTS:
        return None
    values: list[float] = []
    for entry in segments:
        if not isinstance(entry, dict):
            return None
        if entry.get("status") != "scored":
            continue
        ok, value = wire_scalar(entry.get("value"))
        if not ok or not isinstance(value, int | float) or isinstance(value, bool):
            return None
        if not math.isfinite(value):
            return None
        values.append(float(value))
    return tuple(values)


def _normalized(metrics: Mapping[str, MetricResult]) -> dict[str, float | None]:
    return {
        k: _finite(None if m.normalized is None else float(m.normalized))
        for k, m in metrics.items()
    }


CASE_RUN_DEPTH = 4
"""Folders above a case's results where its run's ``cases.json`` may be (``OUT/<model>/<set>/
<case>``, a set of up to three components)."""


def _case_run_doc(results_dir: Path | None) -> dict[str, Any]:
    """The ``cases.json`` of the case run ``results_dir`` belongs to; empty when there is
    none or it cannot be read."""
    if results_dir is None:
        return {}
    for parent in list(results_dir.parents)[:CASE_RUN_DEPTH]:
        path = parent / CASE_RUN
        if not path.is_file():
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return doc if isinstance(doc, dict) else {}
    return {}


def case_sets(results_dir: Path | None) -> dict[str, int]:
    """Every set's number of cases of the case run ``results_dir`` belongs to (its
    ``cases.json``'s ``sets``); empty when there is none or it cannot be read."""
    sets = _case_run_doc(results_dir).get("sets")
    if not isinstance(sets, dict):
        return {}
    return {str(k): v for k, v in sets.items() if isinstance(v, int) and not isinstance(v, bool)}


def case_max_keys(results_dir: Path | None) -> int | None:
    """The most keys a case of that run holds (``cases.json``'s ``max_keys``), or None."""
    value = _case_run_doc(results_dir).get("max_keys")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def wire_case(info: EpisodeInfo, sets: dict[str, int]) -> WireCase | None:
    """The case an episode runs (its ``extra["case"]`` record), or None."""
    record = info.extra.get("case")
    if not isinstance(record, dict):
        return None
    set_name, name = record.get("set"), record.get("name")
    if not isinstance(set_name, str) or not isinstance(name, str):
        return None
    return WireCase(set_name, name, dict(sets))


StopState = Callable[[], WireStop]
"""The run's ``--stop-when`` rule and where it stands now (``StopMonitor.wire_state``)."""


def carries_stop(update: ScoresUpdate) -> bool:
    """An episode's start or final message: where the stop rule's state can have changed (a
    case ended, or the rule was checked before the next one). Progress messages, many a
    second, do not read the run's scores again."""
    plain = update.error is None and update.warning is None
    return plain and (update.final or update.frames_done == 0)


class MqttScoresPublisher(EpisodeObserver):
    def __init__(self, url: str, stop: StopState | None = None) -> None:
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
        self._case: WireCase | None = None
        self._case_sets: dict[str, int] = {}  # learnt from cases.json when a case ended
        self.stop = stop  # the case run's --stop-when state, read off the event loop

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
            case=self._case,
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
        self._case = wire_case(info, self._case_sets)
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
        self._results = wire_results(outcome.scores.metrics, final=True)
        if self._case is not None:
            self._case_sets = case_sets(outcome.results_dir) or self._case_sets
            self._case = WireCase(
                self._case.set,
                self._case.name,
                dict(self._case_sets),
                case_max_keys(outcome.results_dir),
            )
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

    async def _stop_changed(self, last: ScoresUpdate | None) -> ScoresUpdate | None:
        """At the end: the last final message again when the rule's state changed since
        (checked after the last case: met, or not), else None."""
        if self.stop is None or last is None or not last.final:
            return None
        now = await self._read_stop()
        return None if now is None or now == last.stop else replace(last, stop=now)

    async def _read_stop(self) -> WireStop | None:
        """The rule's state now, read off the event loop (it reads the run's scores); None
        when it cannot be read: the live scores go on without it."""
        if self.stop is None:
            return None
        try:
            return await asyncio.to_thread(self.stop)
        except Exception:  # a watcher's extra: never the reason live scores stop
            return None

    async def _publish(self) -> None:
        import aiomqtt

        try:
            async with aiomqtt.Client(**client_kwargs(self.target)) as client:  # type: ignore[arg-type]
                last: ScoresUpdate | None = None
                while True:
                    update = await self.queue.get()
                    if update is None:
                        again = await self._stop_changed(last)
                        if again is not None:
                            await client.publish(self.topic, encode(again), qos=0)
                        return
                    if self.stop is not None and carries_stop(update):
                        update = replace(update, stop=await self._read_stop())
                    await client.publish(self.topic, encode(update), qos=0)
                    last = update
        except aiomqtt.MqttError as exc:
            self.failure = (
                f"{self.target.display}: live scores not published: {connect_problem(exc)}"
            )

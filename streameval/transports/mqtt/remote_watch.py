"""Watching an evaluation that runs elsewhere: live scores from ``streameval/SESSION/scores``
(``MqttScoresPublisher`` on the other side), for ``streameval dashboard --mqtt``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import cast

from streameval.core.metric_result import MetricResult, Status
from streameval.errors import WireError
from streameval.protocol.wire import ScoresUpdate, decode
from streameval.transports.mqtt.url import TOPIC_ROOT, client_kwargs, parse_mqtt_url

OnUpdate = Callable[[str, ScoresUpdate], None]
MAX_SCORES_BYTES = 1 << 20


async def watch_scores(
    url: str, on_update: OnUpdate, on_subscribed: Callable[[], None] | None = None
) -> None:
    """Call ``on_update(session, update)`` for every update until cancelled. Without a
    session in the URL every session on the broker is watched. ``on_subscribed`` is called
    once the broker took the subscription (from then on no update is missed)."""
    import aiomqtt

    target = parse_mqtt_url(url, session_required=False)
    topic = target.topic("scores") if target.session else f"{TOPIC_ROOT}/+/scores"
    async with aiomqtt.Client(**client_kwargs(target)) as client:  # type: ignore[arg-type]
        await client.subscribe(topic, qos=0)
        if on_subscribed is not None:
            on_subscribed()
        async for msg in client.messages:
            payload = msg.payload
            if not isinstance(payload, bytes | bytearray) or not payload:
                continue
            session = str(msg.topic).split("/")[1]
            try:
                update = decode(bytes(payload), max_bytes=MAX_SCORES_BYTES)
            except WireError as exc:
                print(f"dashboard: {msg.topic}: rejected: {exc}", file=sys.stderr)
                continue
            if isinstance(update, ScoresUpdate):
                on_update(session, update)


async def check_broker(url: str) -> None:
    """Connect and leave: the live screen shows a refused password or an untrusted
    certificate as one line and exit 2 before it opens, not as a screen that stays empty."""
    import aiomqtt

    target = parse_mqtt_url(url, session_required=False)
    async with aiomqtt.Client(**client_kwargs(target)):  # type: ignore[arg-type]
        pass


NOT_REPORTED = "not reported by the remote evaluator"


def metric_results(update: ScoresUpdate) -> dict[str, MetricResult]:
    """The update's results as the evaluator had them: status, reason and scalar details
    travel, so an n/a control metric reads ``n/a`` with its why on both sides. A message
    without ``results`` (an older evaluator) has only normalized values: a missing one is
    then all that can be said."""
    if update.results:
        return {
            name: MetricResult(
                m.raw,
                m.normalized,
                cast(Status, m.status),
                m.reason,
                {**m.details, **_segments(m.scored), "remote": True},
            )
            for name, m in update.results.items()
        }
    return {
        name: MetricResult.missing(NOT_REPORTED)
        if value is None
        else MetricResult(None, value, "official", None, {"remote": True})
        for name, value in update.metrics.items()
    }


def _segments(scored: tuple[float, ...] | None) -> dict[str, object]:
    """The scored segments a final message carried, as ``details["segments"]`` holds them
    (only the scored ones: the table pools nothing else), so the watcher's case view
    computes a pooled column as the table does; none when the message carried none."""
    if scored is None:
        return {}
    return {"segments": [{"status": "scored", "value": v} for v in scored]}


def format_update(session: str, update: ScoresUpdate) -> str:
    """One line for ``dashboard --mqtt --no-tui``."""
    if update.error:
        return f"{session}/{update.episode}: error: {update.error}"
    if update.warning:
        return f"{session}/{update.episode}: warning: {update.warning}"
    shown = ", ".join(
        f"{name} {value:.1f}" for name, value in update.metrics.items() if value is not None
    )
    if update.final:
        state = "complete" if update.complete else "incomplete"
        frames = update.frame if update.frames is None else update.frames
        return f"{session}/{update.episode}: final ({state}, {frames} frames): {shown}"
    return (
        f"{session}/{update.episode}: frame {update.frame} key {update.key} "
        f"{update.fps:.1f} fps dropped {update.dropped}" + (f" | {shown}" if shown else "")
    )

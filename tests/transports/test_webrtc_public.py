"""A public-style server with no streameval code, attached with ``webrtc+http://``."""

from __future__ import annotations

import asyncio

from streameval.observers import EpisodeOutcome
from streameval.pipeline import run_episode
from streameval.transports.live import LiveConfig
from streameval.transports.webrtc import WebRTCSource
from tests.transports.public_server import start_public_server
from tests.transports.worlds import CONFIG

KEYS = ("W", "S", "L")  # zoom in, zoom out, pan (a flat pan is a turn, not a strafe)


async def _attach(reverse: bool = False, delay_s: float = 0.0, spk: float = 2.5) -> EpisodeOutcome:
    runner, port = await start_public_server(reverse=reverse, delay_s=delay_s)
    try:
        source = WebRTCSource(
            f"webrtc+http://127.0.0.1:{port}/offer",
            KEYS,
            episode="public",
            suite="test",
            config=LiveConfig(clock="wall", seconds_per_key=spk),
        )
        await source.connect()
        return await run_episode(source, config=CONFIG)
    finally:
        await runner.cleanup()


def test_public_server_obeying_keys() -> None:
    outcome = asyncio.run(_attach())
    m = outcome.scores.metrics
    inter = outcome.interactivity
    print(inter, {k: v.normalized for k, v in m.items()})
    assert outcome.complete, outcome.errors
    assert inter["alignment"] == "inferred"
    assert m["direction_accuracy_trans"].normalized is not None
    assert m["direction_accuracy_trans"].normalized > 80
    assert inter["key_to_response_ms_median"] is not None
    assert inter["key_to_response_ms_median"] < 600


def test_reversed_keys_score_direction_accuracy_near_zero() -> None:
    outcome = asyncio.run(_attach(reverse=True))
    accuracy = outcome.scores.metrics["direction_accuracy_trans"].normalized
    assert outcome.complete, outcome.errors
    assert accuracy is not None and accuracy < 10


def test_late_server_has_longer_key_to_response_latency() -> None:
    outcome = asyncio.run(_attach(delay_s=1.5))
    inter = outcome.interactivity
    assert outcome.complete, outcome.errors
    # every key takes effect 1.5 s after its keydown: measured from the frames alone
    assert inter["key_to_response_ms_median"] is not None
    assert 1500 <= inter["key_to_response_ms_median"] < 2200

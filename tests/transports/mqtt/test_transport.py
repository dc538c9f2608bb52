"""The procedural world served over a real mosquitto broker and attached with ``mqtt://``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from streameval.core.observers import EpisodeOutcome
from streameval.engine.pipeline import run_episode
from streameval.transports.live_config import LiveConfig, SourceRequest
from streameval.transports.mqtt.serve import serve_mqtt
from streameval.transports.mqtt.transport import MqttSource
from tests.transports.conftest import Broker
from tests.transports.worlds import CONFIG, NAME, in_process, normalized, world

KEYS = ("A", "D")
SPK = 1.5


async def _served_episode(
    broker: Broker, live: LiveConfig, results: Path | None = None, **source_kw: Any
) -> EpisodeOutcome:
    w = world()
    ready = asyncio.Event()
    server = asyncio.create_task(
        serve_mqtt(
            w,
            broker.url("s1"),
            name=NAME,
            fps=w.fps,
            width=w.width,
            height=w.height,
            ready=ready,
        )
    )
    await ready.wait()
    try:
        source = MqttSource(
            SourceRequest(broker.url("s1"), KEYS, episode="ep", suite="test", config=live),
            **source_kw,
        )
        await source.connect()
        return await run_episode(source, config=CONFIG, results_dir=results)
    finally:
        server.cancel()
        await asyncio.gather(server, return_exceptions=True)


def test_video_clock_over_mqtt_is_bit_identical_to_in_process(broker: Broker) -> None:
    live = LiveConfig(clock="video", seconds_per_key=SPK)
    served = asyncio.run(_served_episode(broker, live))
    local = in_process(KEYS, SPK)
    assert served.complete, served.errors
    assert served.frames == local.frames == 48
    assert normalized(served) == normalized(local)
    inter = served.interactivity
    assert inter["alignment"] == "reported"
    assert inter["clock"] == "video"
    assert inter["smoke"] is True
    assert inter["frames_duplicate"] == 0 and inter["malformed"] == 0

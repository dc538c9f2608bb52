"""The procedural world served over a real mosquitto broker and attached with ``mqtt://``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from streameval.protocol.schedule import Schedule
from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

from streameval.driver import InProcessSource
from streameval.observers import EpisodeOutcome
from streameval.pipeline import PipelineConfig, run_episode
from streameval.transports.live import LiveConfig
from streameval.transports.mqtt import MqttSource
from streameval.transports.mqtt_serve import serve_mqtt
from tests.transports.conftest import Broker

CONFIG = PipelineConfig(cuts="scenedetect-adaptive")
KEYS = ("A", "D")
SPK = 1.5


async def _served_episode(
    broker: Broker, live: LiveConfig, results: Path | None = None, **source_kw: Any
) -> EpisodeOutcome:
    world = ProceduralWorld(world_config_for_defect("clean"))
    ready = asyncio.Event()
    server = asyncio.create_task(
        serve_mqtt(
            world,
            broker.url("s1"),
            name="procedural-world[clean]",
            fps=world.fps,
            width=world.width,
            height=world.height,
            ready=ready,
        )
    )
    await ready.wait()
    try:
        source = MqttSource(
            broker.url("s1"), KEYS, episode="ep", suite="test", config=live, **source_kw
        )
        await source.connect()
        return await run_episode(source, config=CONFIG, results_dir=results)
    finally:
        server.cancel()
        await asyncio.gather(server, return_exceptions=True)


def _in_process() -> EpisodeOutcome:
    world = ProceduralWorld(world_config_for_defect("clean"))
    source = InProcessSource(
        world,
        Schedule.per_key(KEYS, SPK, world.fps),
        episode="ep",
        model_name="procedural-world[clean]",
        suite="test",
        width=world.width,
        height=world.height,
    )
    return asyncio.run(run_episode(source, config=CONFIG))


def _normalized(outcome: EpisodeOutcome) -> dict[str, float | None]:
    return {k: m.normalized for k, m in outcome.scores.metrics.items()}


def test_video_clock_over_mqtt_is_bit_identical_to_in_process(broker: Broker) -> None:
    live = LiveConfig(clock="video", seconds_per_key=SPK)
    served = asyncio.run(_served_episode(broker, live))
    local = _in_process()
    assert served.complete, served.errors
    assert served.frames == local.frames == 48
    assert _normalized(served) == _normalized(local)
    inter = served.interactivity
    assert inter["alignment"] == "reported"
    assert inter["clock"] == "video"
    assert inter["smoke"] is True
    assert inter["frames_duplicate"] == 0 and inter["malformed"] == 0

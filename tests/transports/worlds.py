"""Shared pieces of the transport tests: the procedural world and its in-process scores."""

from __future__ import annotations

import asyncio

from streameval.protocol.schedule import Schedule
from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

from streameval.core.observers import EpisodeOutcome
from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.transports.inprocess.driver import InProcessSource

CONFIG = PipelineConfig(cuts="scenedetect-adaptive")
NAME = "procedural-world[clean]"


def world() -> ProceduralWorld:
    return ProceduralWorld(world_config_for_defect("clean"))


def in_process(keys: tuple[str, ...], seconds_per_key: float) -> EpisodeOutcome:
    w = world()
    source = InProcessSource(
        w,
        Schedule.per_key(keys, seconds_per_key, w.fps),
        episode="ep",
        model_name=NAME,
        suite="test",
        width=w.width,
        height=w.height,
    )
    return asyncio.run(run_episode(source, config=CONFIG))


def normalized(outcome: EpisodeOutcome) -> dict[str, float | None]:
    """What the world did, metric by metric: the real-time family is left out, it measures
    the session (a served episode's wall time against an in-process one's)."""
    from streameval.metrics.registry import metric_names

    session = set(metric_names(family="realtime"))
    return {k: m.normalized for k, m in outcome.scores.metrics.items() if k not in session}

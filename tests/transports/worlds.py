"""Shared pieces of the transport tests: the procedural world and its in-process scores."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from streameval.protocol.schedule import Schedule
from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

from streameval.core.observers import EpisodeOutcome
from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.transports.inprocess.driver import InProcessSource

CONFIG = PipelineConfig(cuts="scenedetect-adaptive")
MEMORY_OFF = replace(CONFIG, embedding=None, cuts=None, imaging=False, quality_frames=False)
"""The memory and imaging jobs off (their metrics ``missing``), for tests that read none of
their columns: direction, response latency, the session's interactivity, the conditioning. The
embedding, the cut detector and the imaging statistics were a fifth of a paced session's CPU."""
NAME = "procedural-world[clean]"


def world() -> ProceduralWorld:
    """The clean world with its depth reported the cheap way (the renderer's exact depth on a
    160×108 grid): the paced test servers send frames, or the same depth to both runs they
    compare, and the default full-resolution sensor depth costs ~5 ms a frame, which under the
    suite's load made a 16 fps server late (docs/methods.md#global_memory). At 320×216, not
    the world's 640×432: no transport test is about the resolution, and rendering, JPEG and
    VP8 cost a quarter as much on both sides of every paced session (the analysis frame is
    640×432 all the same)."""
    config = world_config_for_defect(
        "clean", width=320, height=216, depth_downsample=2, depth_range_m=None,
        depth_resolvable_step=None,
    )  # fmt: skip
    return ProceduralWorld(config)


class NoImageWorld:
    """A served model whose ``reset`` takes nothing: it cannot start from a case image (the
    servers that must refuse a case's start say so in one line)."""

    def __init__(self) -> None:
        self.inner = world()
        self.fps = self.inner.fps

    def reset(self) -> None:
        self.inner.reset()

    def step(self, key: str) -> Any:
        return self.inner.step(key)


class SizelessWorld:
    """The clean world as an adapter that leaves out the optional ``width``/``height``
    (docs/evaluate-your-model.md): its size is known only from its first frame."""

    def __init__(self) -> None:
        self.inner = world()
        self.fps = self.inner.fps

    def reset(self, image: Any = None, prompt: str | None = None) -> None:
        self.inner.reset(image=image, prompt=prompt)

    def step(self, key: str) -> Any:
        return self.inner.step(key)


class FailingWorld(SizelessWorld):
    """A model whose ``step`` raises at frame ``FAIL_AT`` of every episode (a served model's
    own exception must reach the evaluator as one line, not as silence)."""

    FAIL_AT = 5

    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def reset(self, image: Any = None, prompt: str | None = None) -> None:
        super().reset(image, prompt)
        self.n = 0

    def step(self, key: str) -> Any:
        if self.n == self.FAIL_AT:
            raise RuntimeError("CUDA out of memory (a test's)")
        self.n += 1
        return super().step(key)


def in_process(
    keys: tuple[str, ...], seconds_per_key: float, config: PipelineConfig = CONFIG
) -> EpisodeOutcome:
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
    return asyncio.run(run_episode(source, config=config))


def normalized(outcome: EpisodeOutcome) -> dict[str, float | None]:
    """What the world did, metric by metric: the real-time family is left out, it measures
    the session (a served episode's wall time against an in-process one's)."""
    from streameval.metrics.registry import metric_names

    session = set(metric_names(family="realtime"))
    return {k: m.normalized for k, m in outcome.scores.metrics.items() if k not in session}

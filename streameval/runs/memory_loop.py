"""Jobs of the memory_loop suite (docs/methods.md#suites): the six WorldAtlas trajectories, driven
live.

Kept apart from the worldmark jobs (``builders.py``) because a loop is not a worldmark action:
its episode is a trajectory name, its schedule splits the frames equally among the
trajectory's tokens, its default rate is 24 FPS (not the model's), and the procedural world
must be configured so that one pan token turns exactly 30 degrees and one push token moves
exactly one step. Results go to ``OUT/<model>/<trajectory>/`` like every other episode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from streameval.core.observers import EpisodeObserver
from streameval.errors import BadInputError
from streameval.inputs.numbers import check_frame_count
from streameval.protocol.memory_loop import (
    MEMORY_LOOP_FPS,
    MEMORY_LOOP_SECONDS,
    MEMORY_LOOP_SUITE,
    TOKEN_KEY,
    MemoryLoop,
)
from streameval.results.layout import episode_dir
from streameval.runs.jobs import EpisodeJob

# One push_in token of a memory_loop in the procedural world, metres (its pose unit).
LOOP_STEP_M = 2.0

Recorders = Callable[[Path], list[EpisodeObserver]]


@dataclass(frozen=True)
class LoopPlan:
    """Which memory_loop trajectories to run and for how long (``--trajectory``,
    ``--loop-seconds``; the Python API's ``trajectories`` and ``loop_seconds``)."""

    trajectories: tuple[str, ...] | None = None  # None: all six
    seconds: float = MEMORY_LOOP_SECONDS


def memory_loops(plan: LoopPlan, fps: float | None = None) -> list[MemoryLoop]:
    """The memory_loop trajectories asked for, at ``fps`` (default 24, docs/methods.md#suites)."""
    from streameval.protocol.memory_loop import TRAJECTORIES, memory_loop

    seconds = plan.seconds
    if not (isinstance(seconds, float | int) and 0 < seconds <= 3600 * 2):
        raise BadInputError("--loop-seconds", f"must be in (0, 7200], got {seconds}")
    rate = fps or MEMORY_LOOP_FPS
    names = list(plan.trajectories or TRAJECTORIES)
    unknown = [n for n in names if n not in TRAJECTORIES]
    if unknown:
        raise BadInputError("trajectory", f"unknown {unknown}; known: {', '.join(TRAJECTORIES)}")
    loops = [memory_loop(name, fps=rate, seconds=seconds) for name in names]
    for loop in loops:
        check_frame_count(loop.total_frames, "fps × --loop-seconds")
    return loops


def loop_keys(loop: MemoryLoop) -> tuple[str, ...]:
    """The key of each token, for transports that take keys and seconds per key."""
    return tuple(TOKEN_KEY[t] for t in loop.tokens)


def demo_loop_jobs(
    plan: LoopPlan, out: Path, world_config: Any, model_name: str, recorders: Recorders
) -> list[EpisodeJob]:
    """The procedural world on each loop, sending its true poses and depth."""
    from streameval.transports.inprocess.driver import InProcessSource
    from streameval.worlds.procedural_world import ProceduralWorld

    jobs: list[EpisodeJob] = []
    for loop in memory_loops(plan):
        config = replace(
            world_config,
            fps=loop.fps,
            yaw_rate_deg=loop.yaw_rate_deg,
            forward_speed=loop.speed(LOOP_STEP_M),
        )
        if config.forget_scene_at_s is not None:
            # the amnesia preset's 30 s is the turnaround of a 60 s loop: keep the share
            at = config.forget_scene_at_s * loop.seconds / MEMORY_LOOP_SECONDS
            config = replace(config, forget_scene_at_s=at)

        def open_loop(loop: MemoryLoop = loop, config: Any = config) -> InProcessSource:
            world = ProceduralWorld(config)
            return InProcessSource(
                world,
                loop.schedule(),
                episode=loop.name,
                model_name=model_name,
                suite=MEMORY_LOOP_SUITE,
                width=world.width,
                height=world.height,
                trajectory=loop.name,
            )

        results_dir = episode_dir(out, model_name, loop.name)
        jobs.append(EpisodeJob(loop.name, open_loop, results_dir, recorders(results_dir)))
    return jobs


def model_loop_jobs(
    model: Any,
    name: str,
    plan: LoopPlan,
    out: Path,
    recorders: Recorders,
    *,
    fps: float | None,
    step_timeout: float,
    origin: str,
) -> list[EpisodeJob]:
    """An in-process model (``step(key) -> frame``) on each loop, reset before each one when
    it can be; a model that hung once is not driven again (as ``builders.model_jobs``)."""
    from streameval.runs.python_model import model_source_opener
    from streameval.transports.inprocess.driver import InProcessSource

    open_model = model_source_opener(model, name, step_timeout=step_timeout, origin=origin)
    jobs: list[EpisodeJob] = []
    for loop in memory_loops(plan, fps):

        def open_loop(loop: MemoryLoop = loop) -> InProcessSource:
            return open_model(
                loop.schedule(), episode=loop.name, suite=MEMORY_LOOP_SUITE, trajectory=loop.name
            )

        results_dir = episode_dir(out, name, loop.name)
        jobs.append(EpisodeJob(loop.name, open_loop, results_dir, recorders(results_dir)))
    return jobs

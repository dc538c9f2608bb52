"""Jobs of the memory_loop suite (SPEC §1): the six WorldAtlas trajectories, driven live.

Kept apart from ``cli.py`` because a loop is not a worldmark action: its episode is a
trajectory name, its schedule splits the frames equally among the trajectory's tokens, its
default rate is 24 FPS (not the model's), and the procedural world must be configured so that
one pan token turns exactly 30 degrees and one push token moves exactly one step. Results go
to ``OUT/<model>/<trajectory>/`` like every other episode.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from streameval.errors import BadInputError
from streameval.inputs.numbers import check_frame_count
from streameval.jobs import EpisodeJob
from streameval.layout import episode_dir
from streameval.observers import EpisodeObserver
from streameval.protocol.memory_loop import (
    MEMORY_LOOP_FPS,
    MEMORY_LOOP_SECONDS,
    MEMORY_LOOP_SUITE,
    TOKEN_KEY,
    MemoryLoop,
)

# One push_in token of a memory_loop in the procedural world, metres (its pose unit).
LOOP_STEP_M = 2.0

Recorders = Callable[[Path], list[EpisodeObserver]]


def memory_loop_options(p: argparse.ArgumentParser) -> None:
    """``--suite``, ``--trajectory`` and ``--loop-seconds`` for ``demo`` and ``attach``."""
    from streameval.protocol.memory_loop import TRAJECTORIES

    p.add_argument(
        "--suite",
        default="worldmark",
        choices=["worldmark", MEMORY_LOOP_SUITE],
        help="key suite: worldmark (--actions) or memory_loop (--trajectory)",
    )
    p.add_argument(
        "--trajectory",
        action="append",
        choices=list(TRAJECTORIES),
        help="memory_loop trajectory (repeatable; default: all six)",
    )
    p.add_argument(
        "--loop-seconds", type=float, default=60.0, help="memory_loop episode length (default 60)"
    )


def memory_loops(args: argparse.Namespace, fps: float | None = None) -> list[MemoryLoop]:
    """The memory_loop trajectories asked for, at ``fps`` (default 24, SPEC §1)."""
    from streameval.protocol.memory_loop import TRAJECTORIES, memory_loop

    seconds = args.loop_seconds
    if not (isinstance(seconds, float | int) and 0 < seconds <= 3600 * 2):
        raise BadInputError("--loop-seconds", f"must be in (0, 7200], got {seconds}")
    rate = fps or MEMORY_LOOP_FPS
    names = args.trajectory or list(TRAJECTORIES)
    loops = [memory_loop(name, fps=rate, seconds=seconds) for name in names]
    for loop in loops:
        check_frame_count(loop.total_frames, "fps × --loop-seconds")
    return loops


def loop_keys(loop: MemoryLoop) -> tuple[str, ...]:
    """The key of each token, for transports that take keys and seconds per key."""
    return tuple(TOKEN_KEY[t] for t in loop.tokens)


def demo_loop_jobs(
    args: argparse.Namespace, world_config: Any, model_name: str, recorders: Recorders
) -> list[EpisodeJob]:
    """The procedural world on each loop, sending its true poses and depth."""
    from streameval.driver import InProcessSource
    from streameval.worlds.procedural_world import ProceduralWorld

    jobs: list[EpisodeJob] = []
    for loop in memory_loops(args):
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

        results_dir = episode_dir(args.out, model_name, loop.name)
        jobs.append(EpisodeJob(loop.name, open_loop, results_dir, recorders(results_dir)))
    return jobs


def model_loop_jobs(
    model: Any,
    name: str,
    args: argparse.Namespace,
    recorders: Recorders,
    step_timeout: float,
) -> list[EpisodeJob]:
    """An in-process model (``step(key) -> frame``) on each loop, reset before each one when
    it can be; a model that hung once is not driven again (as ``api.model_jobs``)."""
    from streameval.api import model_size
    from streameval.driver import InProcessSource
    from streameval.model_thread import ModelHealth

    if not callable(getattr(model, "step", None)):
        raise BadInputError(args.url, f"{type(model).__name__} has no step(key)")
    health = ModelHealth()
    jobs: list[EpisodeJob] = []
    for loop in memory_loops(args, args.fps):

        def open_loop(loop: MemoryLoop = loop) -> InProcessSource:
            if health.hung is not None:  # its thread may still be inside the model
                raise BadInputError(name, f"not driven again: {health.hung}")
            return InProcessSource(
                model,
                loop.schedule(),
                episode=loop.name,
                model_name=name,
                suite=MEMORY_LOOP_SUITE,
                width=model_size(model, "width"),
                height=model_size(model, "height"),
                step_timeout=step_timeout,
                reset=callable(getattr(model, "reset", None)),
                health=health,
                trajectory=loop.name,
            )

        results_dir = episode_dir(args.out, name, loop.name)
        jobs.append(EpisodeJob(loop.name, open_loop, results_dir, recorders(results_dir)))
    return jobs

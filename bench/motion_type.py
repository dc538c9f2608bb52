"""Distributions of the depth-free motion type on scenes with known motion
(docs/methods.md#motion-type-fit).

Clean turns and clean strafes, bare frames (no depth, no pose), through the whole pipeline (CPU
default stack). Worlds: the procedural world at several turn rates, strafe speeds and town seeds,
and the third-party OpenGL room (``bench/gl_world.py``: moderngl on Mesa's software rasteriser)
with each of its four texture families. Every 10 s key is one segment with one fit; the table
prints, per case, the segments' p_yaw for turns and p_trans for strafes (minimum, median,
maximum) against the 0.97 the estimator is held to.

The OpenGL room needs the optional extra: ``pip install -e '.[bench]'`` (moderngl) and a Mesa EGL
driver (``apt-get install libegl-mesa0``); without it only the procedural world is printed.

Usage: python bench/motion_type.py [--seconds-per-key 10] [--seeds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import numpy.typing as npt
from streameval.protocol.schedule import Schedule
from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

from bench.validity import Frames  # a model that plays frames rendered in advance
from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.transports.inprocess.driver import InProcessSource

Frame = npt.NDArray[np.uint8]
TARGET = 0.97
GL_FAMILIES = ("noise", "flat", "hifreq", "outdoor")  # tests/perception/scene_families.py


def weights(frames: list[Frame], fps: float, schedule: Schedule) -> dict[str, list[float]]:
    """Per key, the segments' weight of the key's own type (p_yaw of L/R, p_trans of A/D)."""
    h, w = frames[0].shape[:2]
    source = InProcessSource(
        Frames(frames, fps), schedule, episode="e", model_name="m", suite="motion_type",
        width=w, height=h,
    )  # fmt: skip
    outcome = asyncio.run(run_episode(source, config=PipelineConfig()))
    segments = schedule.segments()
    out: dict[str, list[float]] = {}
    for j, fit in outcome.scores.motion_fits.items():
        if fit is None:
            continue
        key = segments[j].key
        out.setdefault(key, []).append(fit.p_yaw if key in "LR" else fit.p_trans)
    return out


def procedural(keys: list[str], **overrides: Any) -> tuple[list[Frame], float]:
    world = ProceduralWorld(world_config_for_defect("clean", **overrides))
    return [world.step(k).image for k in keys], world.fps


def opengl(keys: list[str], **fields: Any) -> tuple[list[Frame], float]:
    from bench.gl_world import GLConfig, GLWorld

    world = GLWorld(GLConfig(**fields))
    return [world.step(k) for k in keys], world.fps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds-per-key", type=float, default=10.0)
    parser.add_argument("--seeds", type=int, default=3, help="procedural towns per case")
    args = parser.parse_args()
    cases: list[tuple[str, str, Any, dict[str, Any]]] = []
    for seed in range(args.seeds):
        for rate in (4.5, 15.0, 90.0):
            cases.append(
                (f"yaw {rate:g} deg/s", "LRLR", procedural, {"yaw_rate_deg": rate, "seed": seed})
            )
        for speed in (1.2, 2.4):
            cases.append(
                (f"strafe {speed:g} m/s", "ADAD", procedural, {"strafe_speed": speed, "seed": seed})
            )
    try:
        import moderngl  # noqa: F401

        for family in GL_FAMILIES:
            for rate in (15.0, 30.0):
                cases.append(
                    (
                        f"opengl {family} yaw {rate:g}",
                        "LRLR",
                        opengl,
                        {"family": family, "yaw_rate_deg": rate},
                    )
                )
            cases.append((f"opengl {family} strafe", "ADAD", opengl, {"family": family}))
    except ImportError:
        print("OpenGL room skipped: pip install -e '.[bench]' (moderngl) and Mesa EGL")
    pooled: dict[str, list[float]] = {}
    t0 = time.monotonic()
    print(f"{'case':<34}{'n':>4}{'min':>8}{'median':>8}{'max':>8}  below {TARGET}")
    for name, keys, render, spec in cases:
        schedule = Schedule.per_key(list(keys), args.seconds_per_key, 16.0)
        frames, fps = render(list(schedule.frame_keys()), **spec)
        for values in weights(frames, fps, schedule).values():
            pooled.setdefault(name, []).extend(values)
        if spec.get("seed", args.seeds - 1) == args.seeds - 1:  # the case's last run
            values = pooled.get(name, [])
            if not values:
                print(f"{name:<34}   0 (no fit)")
                continue
            below = sum(v < TARGET for v in values)
            print(
                f"{name:<34}{len(values):>4}{min(values):>8.3f}{statistics.median(values):>8.3f}"
                f"{max(values):>8.3f}  {below}",
                flush=True,
            )
    everything = np.array([v for values in pooled.values() for v in values])
    print(
        f"\nall {everything.size} segments: min {everything.min():.3f}, "
        f"{int((everything < TARGET).sum())} below {TARGET} ({time.monotonic() - t0:.0f} s)"
    )


if __name__ == "__main__":
    main()

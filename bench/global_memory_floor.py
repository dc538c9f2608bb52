"""Global Memory of the clean procedural world with its own exact pose and depth.

A perfect model should score close to 100; with the reference's floor lookup
(docs/methods.md#global_memory) exact geometry has a floor, and on the procedural world that
floor was far lower than on a closed room (5 s per key, exact depth on the former 160×108 grid:
W 48.3, S 47.7, LR 72.0, A 90.5). This bench prints, per WorldMark action id, the score, e,
``share_over_tau_g``, the normaliser and the pool size, so the floor can be measured under
different depth outputs of the world (``WorldConfig`` fields, ``depth_output``):

- ``--depth-downsample D``: the world's depth grid (``depth_downsample``; default 1);
- ``--max-depth M``: report z-depth beyond M metres as unknown (``depth_range_m``; default 12);
- ``--resolvable R``: report a depth pixel as unknown when its depth differs from a 4-neighbour
  by more than R times the nearer of the two (``depth_resolvable_step``; default 0.015);
- ``--exact``: neither rule (the renderer's exact depth).

With the defaults (the world's), 5 s per key: 91.6 (WRS) to 98.0 (ADA), W 91.8, S 92.0,
LR 92.7; 20 s per key the same (W 92.0, WS 91.7, LR 92.6, WRS 92.0).

It steps the world directly (no pipeline, no cut detector): the views are the pipeline's
(``select_views``), turned into the kernel's inputs as scoring does (``views_from_frames``).

Usage: python bench/global_memory_floor.py [--seconds-per-key S] [--actions 1-15] [options]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streameval.protocol.schedule import Schedule
from streameval.protocol.suites import WORLDMARK
from streameval.worlds.procedural_world import (
    ProceduralWorld,
    WorldConfig,
    world_config_for_defect,
)

from streameval.core.episode.geometry import FrameGeometry
from streameval.core.metric_result import MetricResult
from streameval.metrics.fits.geometry import select_views, views_from_frames
from streameval.metrics.memory.global_memory import global_memory


def episode(
    action: int,
    seconds_per_key: float,
    depth_downsample: int,
    max_depth: float | None,
    rel: float | None,
) -> MetricResult:
    world = ProceduralWorld(
        world_config_for_defect(
            "clean",
            depth_downsample=depth_downsample,
            depth_range_m=max_depth,
            depth_resolvable_step=rel,
        )
    )
    schedule = Schedule.per_key(list(WORLDMARK[action]), seconds_per_key, world.fps)
    views = set(select_views(schedule.total_frames, world.fps))
    geometry: list[FrameGeometry] = []
    for i in range(schedule.total_frames):
        frame = world.step(schedule.key_for_frame(i))
        if i in views:
            size = (world.height, world.width)
            geometry.append(FrameGeometry(i, frame.pose, frame.depth, frame.intrinsics, size))
    return global_memory(views_from_frames(geometry))


def parse_actions(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds-per-key", type=float, default=20.0)
    parser.add_argument("--actions", default="1-15")
    defaults = WorldConfig()
    parser.add_argument("--depth-downsample", type=int, default=defaults.depth_downsample)
    parser.add_argument("--max-depth", type=float, default=defaults.depth_range_m)
    parser.add_argument("--resolvable", type=float, default=defaults.depth_resolvable_step)
    parser.add_argument("--exact", action="store_true", help="no range, no unknown pixels")
    args = parser.parse_args()
    if args.exact:
        args.max_depth = args.resolvable = None
    scores: list[float] = []
    print("id keys    GM       e   share  scale  n_errors   s")
    for action in parse_actions(args.actions):
        t0 = time.perf_counter()
        m = episode(
            action, args.seconds_per_key, args.depth_downsample, args.max_depth, args.resolvable
        )
        d = m.details
        if m.normalized is None:
            print(f"{action:2d} {WORLDMARK[action]:4s} {m.status}: {m.reason}")
            continue
        scores.append(m.normalized)
        print(
            f"{action:2d} {WORLDMARK[action]:4s} {m.normalized:6.2f} {d['e']:.5f} "
            f"{d['share_over_tau_g']:.3f} {d['scale']:6.2f} {d['n_errors']:9d} "
            f"{time.perf_counter() - t0:4.1f}",
            flush=True,
        )
    if scores:
        print(f"min {min(scores):.2f}  mean {sum(scores) / len(scores):.2f}")


if __name__ == "__main__":
    main()

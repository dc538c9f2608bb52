"""Global Memory of the clean procedural world with its own exact pose and depth.

A perfect model should score close to 100; with the reference's floor lookup
(docs/methods.md#global_memory) exact geometry has a floor, and on the procedural world that
floor is far lower than on a closed room. This bench prints, per WorldMark action id, the
score, e, ``share_over_tau_g``, the normaliser and the pool size, so the floor can be measured
under different depth outputs of the world:

- ``--depth-downsample D``: the world's depth grid (``WorldConfig.depth_downsample``);
- ``--max-depth M``: report depth beyond M metres as unknown (NaN);
- ``--resolvable R``: report a depth pixel as unknown when its depth differs from a 4-neighbour
  by more than R times the nearer of the two (grazing ground, depth edges).

It steps the world directly (no pipeline, no cut detector): the views are the pipeline's
(``select_views``), turned into the kernel's inputs as scoring does (``views_from_frames``).

Usage: python bench/global_memory_floor.py [--seconds-per-key S] [--actions 1-15] [options]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streameval.protocol.schedule import Schedule
from streameval.protocol.suites import WORLDMARK
from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

from streameval.core.metric_result import MetricResult
from streameval.metrics.fits.geometry import FrameGeometry, select_views, views_from_frames
from streameval.metrics.memory.global_memory import global_memory


def unresolved(depth: npt.NDArray[np.float64], rel: float) -> npt.NDArray[np.bool_]:
    """Pixels whose depth differs from a finite 4-neighbour by more than ``rel`` × the nearer."""
    bad = np.zeros(depth.shape, dtype=np.bool_)
    fin = np.isfinite(depth)
    for axis in (0, 1):
        a = depth[:-1] if axis == 0 else depth[:, :-1]
        b = depth[1:] if axis == 0 else depth[:, 1:]
        both = (fin[:-1] & fin[1:]) if axis == 0 else (fin[:, :-1] & fin[:, 1:])
        with np.errstate(invalid="ignore"):
            step = both & (np.abs(a - b) > rel * np.minimum(a, b))
        if axis == 0:
            bad[:-1] |= step
            bad[1:] |= step
        else:
            bad[:, :-1] |= step
            bad[:, 1:] |= step
    return bad


def reported_depth(
    depth: npt.NDArray[np.float32], max_depth: float | None, rel: float | None
) -> npt.NDArray[np.float64]:
    out = np.array(depth, dtype=np.float64)
    if rel is not None:
        out[unresolved(out, rel)] = np.nan
    if max_depth is not None:
        out[out > max_depth] = np.nan
    return out


def episode(
    action: int,
    seconds_per_key: float,
    depth_downsample: int,
    max_depth: float | None,
    rel: float | None,
) -> MetricResult:
    world = ProceduralWorld(world_config_for_defect("clean", depth_downsample=depth_downsample))
    schedule = Schedule.per_key(list(WORLDMARK[action]), seconds_per_key, world.fps)
    views = set(select_views(schedule.total_frames, world.fps))
    geometry: list[FrameGeometry] = []
    for i in range(schedule.total_frames):
        frame = world.step(schedule.key_for_frame(i))
        if i in views:
            depth = reported_depth(frame.depth, max_depth, rel)
            size = (world.height, world.width)
            geometry.append(FrameGeometry(i, frame.pose, depth, frame.intrinsics, size))
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
    parser.add_argument("--depth-downsample", type=int, default=4)
    parser.add_argument("--max-depth", type=float, default=None)
    parser.add_argument("--resolvable", type=float, default=None)
    args = parser.parse_args()
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

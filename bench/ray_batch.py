"""Batch replay on Ray against the local run (docs/architecture.md#batch-on-ray).

Prints, for N procedural-world rollouts scored with the default CPU configuration, in one
run (this machine is shared and noisy: read the ratios measured side by side):
  - local: the episodes one after the other in this process (what ``streameval replay`` does);
  - Ray with 1 worker and with 2 workers (a local instance with ``num_cpus`` 1 and 2): batch
    wall time, episodes per minute, and the scaling ratio 2 workers / 1 worker;
  - Ray's per-episode overhead: (1-worker batch − local) / N, and the mean time a task spent
    outside the episode itself (batch wall / N − mean task seconds);
  - the cluster size needed for a 500-video delivery in under 10 minutes, from these figures.

Ray start-up is timed apart: it is paid once per batch, not per episode.

Usage: python bench/ray_batch.py [--episodes 6] [--seconds-per-key 4] [--keep DIR]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import write_rollout
from streameval.engine.config import PipelineConfig
from streameval.scale.tasks import ReplayTask, run_replay_task

KEYS = ["W", "A", "L"]  # one family each: translation, strafe, turn
DELIVERY = 500
BUDGET_S = 600.0


def local_batch(
    tasks: list[ReplayTask], config: PipelineConfig
) -> tuple[float, list[float], list[float]]:
    """(wall s, per-episode s, per-episode CPU s) of the episodes one after the other."""
    t0 = time.perf_counter()
    seconds, cpu = [], []
    for task in tasks:
        report = run_replay_task(task, config)
        assert report.outcome is not None and report.outcome.complete, report
        seconds.append(report.seconds)
        cpu.append(report.cpu_seconds)
    return time.perf_counter() - t0, seconds, cpu


def ray_batch(
    tasks: list[ReplayTask], config: PipelineConfig, workers: int
) -> tuple[float, float, list[float], list[float]]:
    """(Ray start-up s, batch wall s, per-task s, per-task CPU s) with ``workers`` workers."""
    import ray
    from rich.console import Console

    from streameval.scale.ray_batch import RayOptions, connect, run_replay_batch

    # Ray starts its workers at nice 15; on this shared machine that starves them against
    # everyone else's processes (a 1-worker batch ran ~10x slower than local). A dedicated
    # cluster node has no such neighbours, so measure at the local run's priority.
    os.environ.setdefault("RAY_worker_niceness", "0")
    t0 = time.perf_counter()
    connect(RayOptions(num_cpus=workers))
    startup = time.perf_counter() - t0
    try:
        quiet = Console(stderr=True, quiet=True)
        t1 = time.perf_counter()
        batch = run_replay_batch(tasks, config, RayOptions(), resume=False, console=quiet)
        wall = time.perf_counter() - t1
    finally:
        ray.shutdown()
    assert not batch.failures and len(batch.reports) == len(tasks), batch
    return startup, wall, [r.seconds for r in batch.reports], [r.cpu_seconds for r in batch.reports]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=6)
    parser.add_argument("--seconds-per-key", type=float, default=4.0)
    parser.add_argument("--keep", type=Path, default=None, help="keep rollouts/results here")
    parser.add_argument(
        "--cuts", default="auto", help="cut detector (default auto: TransNetV2 when installed)"
    )
    args = parser.parse_args()

    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-ray-"))
    rollout = write_rollout(root / "rollouts" / "ep", KEYS, args.seconds_per_key)
    video_s = len(KEYS) * args.seconds_per_key
    # the same rollout N times (copies, so each episode opens its own files)
    rollouts = [rollout]
    for i in range(1, args.episodes):
        copy = root / "rollouts" / f"ep{i}"
        if not copy.exists():
            shutil.copytree(rollout, copy)
        rollouts.append(copy)
    config = PipelineConfig(cuts=args.cuts)  # the defaults a user gets, unless --cuts
    n = args.episodes

    def tasks(name: str) -> list[ReplayTask]:
        return [ReplayTask(r.name, r, root / name / r.name) for r in rollouts]

    run_replay_task(tasks("warmup")[0], config)  # imports and first-use costs, untimed
    local_wall, local_eps, local_cpu = local_batch(tasks("local"), config)
    start1, wall1, eps1, cpu1 = ray_batch(tasks("ray1"), config, 1)
    start2, wall2, eps2, cpu2 = ray_batch(tasks("ray2"), config, 2)

    per_local = local_wall / n
    per_ray1 = wall1 / n
    overhead = per_ray1 - per_local
    outside_task = per_ray1 - sum(eps1) / n
    rate1, rate2 = 60 * n / wall1, 60 * n / wall2
    scaling = wall1 / wall2
    print(f"{n} episodes of {video_s:g} s video (640×432, 16 fps), CPU config, cuts={args.cuts}")
    print(
        f"local (one after the other):  {local_wall:7.1f} s  {per_local:6.2f} s/episode "
        f"(episode mean {sum(local_eps) / n:.2f} s)"
    )
    print(
        f"Ray, 1 worker:  {wall1:7.1f} s  {rate1:6.2f} episodes/min   "
        f"(start-up {start1:.1f} s, task mean {sum(eps1) / n:.2f} s)"
    )
    print(
        f"Ray, 2 workers: {wall2:7.1f} s  {rate2:6.2f} episodes/min   "
        f"(start-up {start2:.1f} s, task mean {sum(eps2) / n:.2f} s)"
    )
    print(f"scaling 2 workers / 1 worker: {scaling:.2f}× (ideal 2.00×)")
    print(
        f"CPU s per episode: local {sum(local_cpu) / n:.2f}, Ray 1 worker {sum(cpu1) / n:.2f}, "
        f"2 workers {sum(cpu2) / n:.2f} (load average now {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores)"
    )
    print(
        f"Ray overhead per episode: {overhead:+.2f} s against local ({overhead / per_local:+.1%}); "
        f"outside the task itself {outside_task:.2f} s"
    )
    # Cluster size for 500 videos in 10 minutes (after Ray's start-up), episodes being
    # independent tasks. Two bases, both printed:
    #  - CPU: the episode's CPU seconds (all its threads) + Ray's time outside the task; a
    #    dedicated core gives one CPU second per second -> cores = 500 x that / budget;
    #  - wall: episodes in rounds of W parallel workers, each as slow as the 1-worker task
    #    here (inflated on a shared machine, so an upper bound).
    budget = BUDGET_S - start1
    cpu_per_s = (sum(cpu1) / n + max(outside_task, 0.0)) / video_s
    wall_per_s = (sum(eps1) / n + max(outside_task, 0.0)) / video_s
    for length in (video_s, 30.0, 60.0):
        cores = math.ceil(DELIVERY * cpu_per_s * length / budget)
        rounds = max(1, math.floor(budget / (wall_per_s * length)))
        workers = math.ceil(DELIVERY / rounds)
        print(
            f"500 videos of {length:g} s in < 10 min: {cpu_per_s * length:.1f} CPU s/episode "
            f"-> {cores} dedicated cores; by this machine's 1-worker wall time "
            f"({wall_per_s * length:.1f} s/episode) {workers} workers"
        )
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

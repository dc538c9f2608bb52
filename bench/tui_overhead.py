"""What the dashboard costs the pipeline: replay fps with the TUI attached vs without.

    python bench/tui_overhead.py [--seconds 60] [--repeats 2] [--keep DIR]

Generates a rollout (``--seconds`` of 640×432 video at 16 fps from the procedural world,
recorded with ``replay.Recorder``) in a temp dir, then replays it as fast as possible:

- plain: ``streameval.runs.jobs.run_jobs`` with no observer (what ``--no-tui`` runs, minus prints);
- dashboard: ``tui.run_dashboard`` with the App headless (it still lays out and renders every
  update; only the terminal writes are skipped), exiting after the episode.

Both run the same job in the same process, alternating, ``--repeats`` times each; the figure
is the pipeline's own fps (frames received / wall seconds from the first to the last frame,
the episode's ``interactivity`` block), so App start-up is not counted. Prints both fps (best
of the repeats), the ratio dashboard / plain (target ≥ 0.9) and the median of the per-pair
ratios. On a shared machine the fps move with other load, so two CPU figures that other
processes barely disturb are printed too: the process CPU time per run (plain / dashboard is
what the fps ratio would be for a CPU-bound run on an idle machine) and the CPU time of the
event-loop thread, where the dashboard lives (decoding and flow run in other threads).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from streameval.protocol.schedule import Schedule  # noqa: E402
from streameval.replay import Recorder, ReplaySource, read_rollout_dir  # noqa: E402
from streameval.tui import DashboardOptions, run_dashboard  # noqa: E402
from streameval.worlds.procedural_world import ProceduralWorld, WorldConfig  # noqa: E402

from streameval.core.events import FrameEvent  # noqa: E402
from streameval.core.source import Source  # noqa: E402
from streameval.engine.config import PipelineConfig  # noqa: E402
from streameval.runs.jobs import EpisodeJob, JobsReport, run_jobs  # noqa: E402

KEYS = ("W", "A", "D", "L", "R", "S")


def make_rollout(out: Path, seconds: float) -> Path:
    """Record ``seconds`` of the procedural world (640×432, 16 fps) driven through ``KEYS``."""
    world = ProceduralWorld(WorldConfig())
    schedule = Schedule.per_key(KEYS, seconds / len(KEYS), world.fps)
    recorder = Recorder(out, world.fps, "procedural-world[clean]", "bench", episode="bench")
    try:
        for i, key in enumerate(schedule.frame_keys()):
            frame = world.step(key)
            recorder.add_frame(FrameEvent(i, frame.image, key, i / world.fps))
    finally:
        recorder.close(True)
    return out


def _job(rollout_dir: Path, results: Path) -> EpisodeJob:
    rollout = read_rollout_dir(rollout_dir)

    def open_source() -> Source:
        return ReplaySource(rollout, pace=None)

    return EpisodeJob("bench", open_source, results)


def pipeline_fps(report: JobsReport) -> float:
    """Frames received per wall second, first to last frame (the pipeline's own figure)."""
    (outcome,) = report.outcomes
    frames = outcome.interactivity.get("frames_received")
    wall = outcome.interactivity.get("wall_seconds")
    if not isinstance(frames, int) or not isinstance(wall, float) or wall <= 0:
        raise RuntimeError(f"no throughput in {outcome.interactivity}")
    return frames / wall


Run = tuple[float, float, float]  # pipeline fps, loop-thread CPU s, process CPU s


def run_plain(rollout_dir: Path, results: Path, config: PipelineConfig) -> Run:
    loop_cpu, cpu = time.thread_time(), time.process_time()
    report = asyncio.run(run_jobs([_job(rollout_dir, results)], config, []))
    return pipeline_fps(report), time.thread_time() - loop_cpu, time.process_time() - cpu


def run_with_dashboard(rollout_dir: Path, results: Path, config: PipelineConfig) -> Run:
    loop_cpu, cpu = time.thread_time(), time.process_time()
    report = run_dashboard(
        [_job(rollout_dir, results)],
        config,
        [],
        DashboardOptions(stay_open=False),
        headless=True,
    )
    return pipeline_fps(report), time.thread_time() - loop_cpu, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="dashboard overhead on replay throughput")
    parser.add_argument("--seconds", type=float, default=60.0, help="rollout length (video s)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each variant")
    parser.add_argument("--keep", type=Path, default=None, help="keep the rollout here")
    args = parser.parse_args(argv)
    config = PipelineConfig()
    with tempfile.TemporaryDirectory() as tmp:
        rollout_dir = args.keep or Path(tmp) / "rollout"
        if not (rollout_dir / "meta.json").is_file():
            t0 = time.perf_counter()
            make_rollout(rollout_dir, args.seconds)
            print(f"rollout: {rollout_dir} ({time.perf_counter() - t0:.1f} s to record)")
        frames = read_rollout_dir(rollout_dir).frame_count
        plain: list[Run] = []
        dashboard: list[Run] = []
        for r in range(args.repeats):
            plain.append(run_plain(rollout_dir, Path(tmp) / f"plain{r}", config))
            dashboard.append(run_with_dashboard(rollout_dir, Path(tmp) / f"tui{r}", config))
            (pf, pl, pc), (df, dl, dc) = plain[-1], dashboard[-1]
            print(
                f"  run {r + 1}: plain {pf:.1f} fps, dashboard {df:.1f} fps "
                f"(loop-thread CPU {pl:.2f} s vs {dl:.2f} s, process CPU {pc:.1f} s vs {dc:.1f} s)"
            )
    pairs = list(zip(plain, dashboard, strict=True))
    best_plain = max(run[0] for run in plain)
    best_tui = max(run[0] for run in dashboard)
    extra_loop = statistics.median(d[1] - p[1] for p, d in pairs)
    cpu_ratio = statistics.median(p[2] for p, _ in pairs) / statistics.median(
        d[2] for _, d in pairs
    )
    print(f"frames per run:            {frames}")
    print(f"plain (run_jobs):          {best_plain:7.1f} fps (best of {args.repeats})")
    print(f"dashboard (headless App):  {best_tui:7.1f} fps (best of {args.repeats})")
    print(f"ratio dashboard / plain:   {best_tui / best_plain:7.3f}  (target >= 0.9)")
    print(f"median per-pair ratio:     {statistics.median(d[0] / p[0] for p, d in pairs):7.3f}")
    print(
        f"CPU ratio plain / dashboard: {cpu_ratio:5.3f}  (process CPU per run, medians: the fps "
        "ratio of a CPU-bound run on an otherwise idle machine)"
    )
    print(
        f"dashboard CPU on the loop thread: {extra_loop:.2f} s per run "
        f"({1000 * extra_loop / frames:.2f} ms per frame)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

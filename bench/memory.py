"""Cost of the memory metrics (docs/methods.md#memory-metrics), on the CPU defaults.

Prints, for one 120 s 640×432 rollout replayed as fast as possible, in one run:
  - pipeline frames/s with memory perception off, with the CPU embedding + PySceneDetect, and
    with the CPU embedding + TransNetV2 (its own worker process) in eager torch and on its
    default runtime (OpenVINO where installed), as multiples of real time at 16 FPS (target:
    ≥ 1.5× with every CPU default on, TransNetV2 included);
  - TransNetV2's detector alone on the rollout's frames, eager torch vs its default runtime;
  - episode-end finalization time (last frame perceived → scores written) as fast as possible
    (TransNetV2's backlog included) and paced at 2× real time, and how much of it is the
    memory kernels themselves (rescore of the cache) — target ≤ 3 s.

Usage: python bench/memory.py [--keep DIR] [--only RUN] [--skip-eager]

On a CPU without native bfloat16, or as one (``STREAMEVAL_CPU_FEATURES=baseline``), the default
runtime is TransNetV2's int8 pass with its float32 band; the ``float32`` run is what such a CPU
ran before it.

``--only "cpu embedding + transnetv2"`` replays that one run and stops (for a profiler:
``py-spy record --subprocesses -o flame.svg -- python bench/memory.py --only ...``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streameval.replay import ReplaySource, read_rollout

from bench.common import KEYS_120S, write_rollout
from bench.transnet import decode, detector_alone
from streameval.core.observers import EpisodeObserver, EpisodeOutcome, Progress
from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.metrics.memory.episode import memory_metrics
from streameval.perception.transnet_runtime import RUNTIME_ENV
from streameval.results.cache.episode import load_episode_cache


class Timing(EpisodeObserver):
    def __init__(self) -> None:
        self.last_perceived = 0.0
        self.end = 0.0

    def on_progress(self, progress: Progress) -> None:
        self.last_perceived = time.perf_counter()

    def on_end(self, outcome: EpisodeOutcome) -> None:
        self.end = time.perf_counter()


def replay(
    rollout_dir: Path, out: Path, config: PipelineConfig, pace: float | None = None
) -> tuple[float, float]:
    timing = Timing()
    t0 = time.perf_counter()
    outcome = asyncio.run(
        run_episode(
            ReplaySource(read_rollout(rollout_dir), pace=pace),
            config=config,
            results_dir=out,
            observers=[timing],
        )
    )
    assert outcome.complete, outcome.errors
    return outcome.frames / (timing.end - t0), timing.end - timing.last_perceived


def warm_up() -> None:
    """TransNetV2's cached models made before anything is timed (the OpenVINO export, and the
    int8 model on a CPU without native bfloat16: a one-off cost per machine, ~35 s)."""
    from streameval.perception.transnet import TransNetV2Detector
    from streameval.perception.transnet_pool import POOL

    det = TransNetV2Detector(runtime="auto")
    ready = det._worker.inbox.get(timeout=600)
    assert ready is not None and "ready" in ready, ready
    det.close()
    POOL.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None, help="keep the rollout in this dir")
    parser.add_argument("--only", default=None, help="replay only this run (its name) and stop")
    parser.add_argument(
        "--skip-eager", action="store_true", help="leave out the eager-torch runs (the slowest)"
    )
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="streameval-bench-"))
    r120 = base / "r120"
    if not (r120 / "meta.json").exists():
        write_rollout(r120, KEYS_120S)
    runs = {
        "memory off": PipelineConfig(embedding=None, cuts=None),
        "cpu embedding + scenedetect": PipelineConfig(cuts="scenedetect-adaptive"),
        # TransNetV2 in eager torch (its runtime before OpenVINO), then on its default runtime
        "cpu embedding + transnetv2 eager": PipelineConfig(cuts="transnetv2"),
        # OpenVINO in float32 throughout (a CPU without native bfloat16 before the int8 pass)
        "cpu embedding + transnetv2 float32": PipelineConfig(cuts="transnetv2"),
        "cpu embedding + transnetv2": PipelineConfig(cuts="transnetv2"),
    }
    if args.skip_eager:
        del runs["cpu embedding + transnetv2 eager"]
    if args.only is not None:
        if args.only not in runs:
            parser.error(f"--only {args.only!r}: the runs are {', '.join(map(repr, runs))}")
        runs = {args.only: runs[args.only]}
    warm_up()
    print("120 s rollout, 640x432, replayed as fast as possible")
    base_fps = None
    forced = {" eager": "torch", " float32": "openvino-f32"}
    for name, config in runs.items():
        runtime = next((rt for tail, rt in forced.items() if name.endswith(tail)), None)
        if runtime:
            os.environ[RUNTIME_ENV] = runtime
        try:
            fps, final_s = replay(r120, base / name.replace(" ", "_"), config)
        finally:
            if runtime:
                os.environ.pop(RUNTIME_ENV, None)
        base_fps = base_fps or fps
        print(
            f"  {name:30s} {fps:7.1f} frames/s = {fps / 16:5.2f}x real time"
            f"  ({fps / base_fps:.2f} of memory off);  finalization {final_s:5.2f} s"
        )
    if args.only is not None:
        return
    frames, _ = decode(r120 / "video.mp4")
    base_name, base_runtime = (
        ("openvino-f32", "openvino-f32") if args.skip_eager else ("eager torch", "torch")
    )
    base_alone, _, _, _ = detector_alone(frames, base_runtime)
    default_fps, _, default_runtime, _ = detector_alone(frames, "auto")
    print(
        f"  transnetv2 alone (worker, pipe, windows, model): {base_name} {base_alone:.1f}"
        f" frames/s, {default_runtime} (default) {default_fps:.1f} frames/s"
        f" ({default_fps / base_alone:.2f}x)"
    )
    # A live model streams at its fps: TransNetV2's worker (~65 frames/s on one thread) keeps
    # up, and only its last, padded windows remain at episode end. Paced at 2x real time:
    fps, final_s = replay(r120, base / "paced", PipelineConfig(cuts="transnetv2"), pace=32.0)
    print(
        f"  paced at 32 frames/s (2x real time), transnetv2: {fps:5.1f} frames/s;"
        f"  finalization {final_s:5.2f} s  (target <= 3 s)"
    )
    cache = load_episode_cache(base / "cpu_embedding_+_transnetv2" / "cache")
    t0 = time.perf_counter()
    memory_metrics(cache)
    kernels_s = time.perf_counter() - t0
    print(f"  memory kernels alone at episode end (from the cache): {kernels_s:.3f} s")


if __name__ == "__main__":
    main()

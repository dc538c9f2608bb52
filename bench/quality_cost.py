"""Cost of the quality perception: CPU imaging statistics and the 1-fps frames.

Prints, for one 60 s 640×432 rollout of the procedural world (lossy x264, like a delivery):
  - milliseconds per frame of the imaging statistics: a full row (sharpness, noise,
    colourfulness, exposure, clipping), a light row (exposure and clipping only, the frames in
    between), and the amortised cost at 16 FPS (a full row every ``detail_stride`` frames);
  - milliseconds per kept 1-fps frame (shrink to 448 px) and the PNG bytes it adds to the cache;
  - the replay pipeline (control metrics; no memory perception, which has its own bench) with
    the quality perception (statistics and 1-fps frames; no Q-Align) on and off, side by
    side, and its multiple of real time at 16 FPS (target ≥ 4×).

Usage: python bench/quality_cost.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cv2
import numpy as np

from bench.common import write_rollout
from bench.throughput import pipeline_fps
from streameval.engine.config import PipelineConfig
from streameval.metrics.quality.imaging import detail_stride, frame_statistics
from streameval.perception.analysis import to_analysis_gray
from streameval.results.cache.quality import shrink_for_quality


def decoded_frames(rollout_dir: Path) -> list[np.ndarray]:
    import av

    with av.open(str(rollout_dir / "video.mp4")) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def per_frame_ms(frames: list[np.ndarray], detail: bool) -> float:
    grays = [to_analysis_gray(f) for f in frames]
    t0 = time.perf_counter()
    for gray, rgb in zip(grays, frames, strict=True):
        frame_statistics(gray, rgb, detail=detail)
    return 1e3 * (time.perf_counter() - t0) / len(frames)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None, help="keep the rollout in this dir")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="streameval-bench-"))
    rollout = base / "r60"
    if not (rollout / "meta.json").exists():
        write_rollout(rollout, ["W", "A", "L"])
    cv2.setNumThreads(PipelineConfig().opencv_threads or 0)
    frames = decoded_frames(rollout)
    fps = 16.0
    stride = detail_stride(fps)
    full = per_frame_ms(frames, detail=True)
    light = per_frame_ms(frames, detail=False)
    amortised = (full + (stride - 1) * light) / stride
    kept = frames[:: int(fps)]
    t0 = time.perf_counter()
    shrunk = [shrink_for_quality(f) for f in kept]
    shrink_ms = 1e3 * (time.perf_counter() - t0) / len(kept)
    png_bytes = np.mean([cv2.imencode(".png", f)[1].size for f in shrunk])
    print(f"\n60 s rollout, 640x432, {len(frames)} frames, OpenCV threads 1")
    print(f"  imaging statistics, full row   {full:6.2f} ms/frame")
    print(f"  imaging statistics, light row  {light:6.2f} ms/frame")
    print(f"  amortised at 16 FPS (full every {stride} frames) {amortised:6.2f} ms/frame")
    print(
        f"  1-fps frame kept: shrink {shrink_ms:.2f} ms, PNG {png_bytes / 1024:.0f} KiB per second"
    )

    off = PipelineConfig(embedding=None, cuts=None, imaging=False, quality_frames=False)
    on = PipelineConfig(embedding=None, cuts=None, imaging=True, quality_frames=True)
    results = {}
    for name, config in (("off", off), ("on", on), ("off again", off), ("on again", on)):
        speed, _, _ = pipeline_fps(rollout, base / f"out-{name.replace(' ', '-')}", config)
        results[name] = speed
    best_off = max(results["off"], results["off again"])
    best_on = max(results["on"], results["on again"])
    print("\nreplay pipeline, control metrics (best of two runs each, interleaved)")
    print(f"  quality perception off  {best_off:8.1f} frames/s")
    print(f"  quality perception on   {best_on:8.1f} frames/s  (ratio {best_on / best_off:.3f})")
    print(f"  real-time factor @16 FPS with it on {best_on / 16.0:6.2f}x  (target >= 4x)")


if __name__ == "__main__":
    main()

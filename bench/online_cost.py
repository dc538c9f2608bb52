"""Per-frame cost of the online (provisional) update at minute 1 and minute 30.

A 30-minute episode at 16 FPS is fed frame by frame into the pipeline's own state (an
``EpisodeTrack``: signals, keys, motion-type samples) with the provisional update every 0.5 s
of video, exactly as the pipeline does (``streameval/engine/provisional.py``). Signals are synthetic
(perception is not what is measured); fit samples have the size perception produces at
640×432. Printed, measured side by side in one run:

  - the incremental update: mean per-frame cost over minute 1 (frames 960–1919) and over
    minute 30 (the last 960 frames), and their ratio (target: within 1.2×);
  - the previous way (rebuild the cache, rescore the whole prefix), sampled at the same two
    minutes, for comparison.

Usage: python bench/online_cost.py [--minutes 30] [--fps 16]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streameval.core.episode.motion import FitSample
from streameval.engine.provisional import LiveScores
from streameval.engine.scoring import score_episode
from streameval.engine.track import EpisodeTrack
from streameval.metrics.fits.motion_type import fit_frames

KEYS = "WADLRS"
SECONDS_PER_KEY = 4.0
UPDATE_EVERY_S = 0.5  # PipelineConfig.provisional_every_s (wall seconds; video seconds here)
GRID_POINTS = 13 * 18  # 640×432 / 4 (depth-free grid) / FIT_PIXEL_STEP


def episode(minutes: float, fps: float) -> tuple[list[str], np.ndarray, np.ndarray, set[int]]:
    n = int(minutes * 60 * fps)
    per_key = int(SECONDS_PER_KEY * fps)
    keys = [KEYS[(i // per_key) % len(KEYS)] for i in range(n)]
    rng = np.random.default_rng(0)
    sx = rng.normal(0.5, 1.0, n)
    srad = rng.normal(-0.2, 1.0, n)
    fit: set[int] = set()
    for start in range(0, n, per_key):
        if keys[start] in "ADLR":
            fit.update(fit_frames(start, min(n, start + per_key), fps, n))
    return keys, sx, srad, fit


def sample(frame: int, rng: np.random.Generator) -> FitSample:
    def f32() -> np.ndarray:
        return rng.normal(size=GRID_POINTS).astype(np.float32)

    return FitSample(frame, f32() * 300, f32() * 200, f32(), f32(), None)


def run(minutes: float, fps: float, old_samples: int) -> None:
    keys, sx, srad, fit = episode(minutes, fps)
    n = len(keys)
    track = EpisodeTrack(meta={"fps": fps})
    live = LiveScores(track, fps)
    rng = np.random.default_rng(1)
    every = max(1, round(UPDATE_EVERY_S * fps))
    minute = int(60 * fps)
    costs = np.zeros(n)
    old: dict[str, list[float]] = {"minute 1": [], f"minute {minutes:g}": []}
    for i in range(n):
        t0 = time.perf_counter()
        track.set_frame_key(i, keys[i], keys[i])
        if i >= 2:  # signal i-2 (flow from frame i-2 to i) arrives with frame i
            track.sx.extend(sx[i - 2 : i - 1])
            track.srad.extend(srad[i - 2 : i - 1])
        if i in fit:
            track.fit_samples.append(sample(i, rng))
        if i % every == 0:
            live.compute()
        costs[i] = time.perf_counter() - t0
        window = "minute 1" if minute <= i < 2 * minute else None
        if i >= n - minute:
            window = f"minute {minutes:g}"
        if window and i % every == 0 and len(old[window]) < old_samples and i % (every * 16) == 0:
            t0 = time.perf_counter()
            score_episode(track.to_cache(), final=False)
            old[window].append(time.perf_counter() - t0)
    first = costs[minute : 2 * minute].mean()
    last = costs[n - minute :].mean()
    print(f"{minutes:g}-minute episode at {fps:g} FPS, update every {every} frames")
    print(
        f"incremental: {1e6 * first:8.1f} µs/frame at minute 1, {1e6 * last:8.1f} µs/frame at "
        f"minute {minutes:g}; ratio {last / first:.2f} (target ≤ 1.2)"
    )
    o1, o30 = (statistics.median(v) for v in old.values())
    print(
        f"rebuild + rescore (before): {1e3 * o1:7.2f} ms/update at minute 1, "
        f"{1e3 * o30:7.2f} ms/update at minute {minutes:g}; ratio {o30 / o1:.1f} "
        f"({1e6 * o1 / every:.0f} vs {1e6 * o30 / every:.0f} µs/frame)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--fps", type=float, default=16.0)
    parser.add_argument("--old-samples", type=int, default=5)
    args = parser.parse_args()
    run(args.minutes, args.fps, args.old_samples)


if __name__ == "__main__":
    main()

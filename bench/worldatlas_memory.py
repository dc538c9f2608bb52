"""WorldAtlas closed-loop memory metrics on the procedural world: clean vs amnesia, and cost.

Runs ``streameval demo --suite memory_loop`` on all six trajectories with the clean world and
with the ``amnesia`` world (the whole scene forgotten at half the loop), on the CPU defaults
(``cpu-colorhist-rbf`` features, ``cpu-filterbank-gram``), and prints:

  - per trajectory and metric, clean vs amnesia and the margin (clean − amnesia), with the
    half-life's status (a clean world shows no measurable decay);
  - the added cost of the closed-loop metrics per episode on the CPU defaults (target ≤ 2 s
    for a 60 s loop): keeping every frame (shrink + JPEG), at episode end decoding the pairs'
    frames and running the two backends, and scoring the four metrics from the cache.

Usage: python bench/worldatlas_memory.py [--loop-seconds 60] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streameval.protocol.memory_loop import TRAJECTORIES

from streameval.engine.closed_loop_frames import keep_revisit_frames
from streameval.engine.track import WorldAtlasTrack
from streameval.metrics.worldatlas.closed_loop_scores import CLOSED_LOOP_METRICS, score_closed_loop
from streameval.perception.embedding import ColorHistRbf
from streameval.perception.gram import FilterBankGram
from streameval.results.cache.episode import EpisodeCache

DEFECTS = ("clean", "amnesia")


def run_demo(defect: str, seconds: float, out: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "streameval",
        "demo",
        "--suite",
        "memory_loop",
        "--defect",
        defect,
        "--loop-seconds",
        str(seconds),
        "--no-tui",
        "--record",
        "off",
        "--out",
        str(out),
    ]
    subprocess.run(
        cmd, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, stdout=subprocess.DEVNULL
    )


def table(root: Path) -> dict[str, dict[str, dict[str, object]]]:
    """{trajectory: {defect: {metric: (status, value, reason)}}}."""
    out: dict[str, dict[str, dict[str, object]]] = {}
    for defect in DEFECTS:
        for name in TRAJECTORIES:
            doc = json.loads(
                (root / defect / f"procedural-world-{defect}" / name / "scores.json").read_text()
            )
            out.setdefault(name, {})[defect] = {m: doc["metrics"][m] for m in CLOSED_LOOP_METRICS}
    return out


def cost(root: Path) -> None:
    """Added cost of one episode of the clean run (the longest trajectory cache)."""
    episode = root / "clean" / "procedural-world-clean" / "square_loop"
    cache = EpisodeCache.load(episode / "cache")
    atlas = cache.worldatlas
    assert atlas is not None and atlas.poses is not None and atlas.closed_loop is not None
    frames = len(cache.frame_keys)
    kept = atlas.closed_loop.frames
    sample = next(iter(kept.values()))
    # keeping every frame: shrink the native 640x432 frame (upsampled stand-in) + JPEG
    import cv2

    cv2.setNumThreads(1)  # as the pipeline runs (PipelineConfig.opencv_threads)
    native = cv2.resize(sample, (640, 432), interpolation=cv2.INTER_CUBIC)
    track = WorldAtlasTrack()
    t0 = time.perf_counter()
    for i in range(200):
        track.keep_frame(i, native, None)
    per_frame = (time.perf_counter() - t0) / 200
    # episode end: decode the pairs' frames, features and Gram distances
    track = WorldAtlasTrack()
    for i in range(frames):
        track.keep_frame(i, native if i not in kept else cv2.resize(kept[i], (640, 432)), None)
        if not (atlas.poses[i] != atlas.poses[i]).any():
            track.poses[i] = atlas.poses[i]
    embedder, gram = ColorHistRbf(), FilterBankGram()
    t0 = time.perf_counter()
    keep_revisit_frames(track, frames, cache.fps, embedder, gram)
    end_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    score_closed_loop(
        atlas.poses, fps=cache.fps, pose_source=atlas.pose_source, kept=atlas.closed_loop
    )
    score_s = time.perf_counter() - t0
    total = per_frame * frames + end_s + score_s
    print(f"\nadded cost per episode ({frames} frames, {cache.fps:g} fps, CPU defaults):")
    print(f"  keep every frame   {per_frame * 1e3:6.2f} ms/frame -> {per_frame * frames:5.2f} s")
    print(f"  episode end        {end_s:5.2f} s (decode pairs, features, Gram)")
    print(f"  scoring (kernels)  {score_s:5.2f} s (also what rescore pays)")
    print(f"  total              {total:5.2f} s (target <= 2 s for a 60 s loop)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--loop-seconds", type=float, default=60.0)
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--reuse", action="store_true", help="read --keep DIR without running")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="worldatlas-memory-"))
    if not args.reuse:
        for defect in DEFECTS:
            run_demo(defect, args.loop_seconds, root / defect)
    rows = table(root)
    print(f"loop {args.loop_seconds:g} s; values on WorldAtlas's [0, 1] scale")
    print(f"{'trajectory':17} {'metric':27} {'clean':>8} {'amnesia':>8} {'margin':>8}")
    for name, by_defect in rows.items():
        for metric in CLOSED_LOOP_METRICS:
            cells = []
            values = []
            for defect in DEFECTS:
                m = by_defect[defect][metric]
                value = m.get("normalized")
                values.append(value)
                cells.append(f"{value:8.4f}" if m["status"] == "official" else f"{'n/a':>8}")
            margin = f"{values[0] - values[1]:8.4f}" if None not in values else f"{'':>8}"
            note = ""
            if metric == "memory_half_life":
                codes = [
                    by_defect[d][metric].get("details", {}).get("reason_code") for d in DEFECTS
                ]
                note = f"  ({', '.join(str(c) for c in codes)})"
            print(f"{name:17} {metric:27} {cells[0]} {cells[1]} {margin}{note}")
    cost(root)
    print(f"\nresults in {root}")


if __name__ == "__main__":
    main()

"""WorldAtlas closed-loop memory metrics on the procedural world: clean vs amnesia, and cost.

Runs ``streameval demo --suite memory_loop`` on all six trajectories with the clean world and
with the ``amnesia`` world (the whole scene forgotten at half the loop), on the CPU defaults
(``cpu-colorhist-rbf`` features, ``cpu-filterbank-gram``), and prints:

  - per trajectory and metric, clean vs amnesia and the margin (clean − amnesia), with the
    half-life's status (a clean world shows no measurable decay);
  - the added cost of the closed-loop metrics per episode on the CPU defaults (target ≤ 2 s
    for a 60 s loop), wall and CPU seconds (CPU: all threads of the process): keeping every
    frame (shrink + JPEG), at episode end the return gate, decoding the pairs' frames and the
    two backends on each distinct frame, and scoring the four metrics from the cache (SIFT once
    per distinct frame), with the main parts also timed alone, and rescore's kernel, which
    computes the return gate again (a live run remembers the episode end's).

Measured (60 s square_loop: 1,440 frames, 23 pairs of 24 distinct frames; 2 cores): on the
quiet machine, three runs, CPU 0.49–0.53 keep + 0.46–0.49 episode end + 0.90–0.91 scoring =
1.86–1.92 s (wall 1.25–1.32 s: SIFT, SSIM and Gram on 2 threads). Shared with other jobs at a
load of 6-13 (wall ≈ 1.5× CPU, the threads bought nothing): CPU 1.9–2.2 s (wall 2.9–3.5 s),
against CPU 2.8–3.5 s (wall 3.9–5.2 s) before frames were shared between pairs, measured
alongside (docs/methods.md#closed-loop-memory-metrics).

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
from streameval.results.cache.episode import load_episode_cache

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


class Clock:
    """Wall and CPU seconds of a block; CPU is the process's, all threads together (the
    closed-loop work runs SIFT and the Gram statistic on a few threads: wall is what the user
    waits for, CPU what the machine pays)."""

    wall = cpu = 0.0

    def __enter__(self) -> Clock:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu


def cost(root: Path) -> None:
    """Added cost of one episode of the clean run (the longest trajectory cache), in the order
    the live pipeline pays it, each part also alone; wall and CPU seconds (:class:`Clock`)."""
    import cv2
    import numpy as np

    from streameval.core.parallel import MAX_WORKERS, available_cores
    from streameval.metrics.worldatlas import revisit
    from streameval.metrics.worldatlas.closed_loop import geometric_closure
    from streameval.metrics.worldatlas.closed_loop_scores import closed_loop_pairs
    from streameval.perception.gram import pair_distances

    episode = root / "clean" / "procedural-world-clean" / "square_loop"
    cache = load_episode_cache(episode / "cache")
    atlas = cache.worldatlas
    assert atlas is not None and atlas.poses is not None and atlas.closed_loop is not None
    frames = len(cache.frame_keys)
    kept = atlas.closed_loop
    poses = atlas.poses
    cv2.setNumThreads(1)  # as the pipeline runs (PipelineConfig.opencv_threads)
    # OpenCV builds its CIELAB tables on the first RGB->Lab conversion (~0.2 s, once a
    # process); a live run has done so on its first frame (the cpu-colorhist-rbf embedding)
    cv2.cvtColor(np.zeros((8, 8, 3), np.uint8), cv2.COLOR_RGB2LAB)
    # keeping every frame: shrink the native 640x432 frame (upsampled stand-in) + JPEG
    native = cv2.resize(next(iter(kept.frames.values())), (640, 432), interpolation=cv2.INTER_CUBIC)
    track = WorldAtlasTrack()
    with Clock() as keep:
        for i in range(200):
            track.keep_frame(i, native, None)
    track = WorldAtlasTrack()
    for i in range(frames):
        image = native if i not in kept.frames else cv2.resize(kept.frames[i], (640, 432))
        track.keep_frame(i, image, None)
        if not np.isnan(poses[i]).any():
            track.poses[i] = poses[i]
    embedder, gram = ColorHistRbf(), FilterBankGram()
    revisit._GATE_MEMO.clear()  # the episode end computes the gate; scoring reuses it
    with Clock() as end:  # the pairs, decode their frames, features and Gram distances
        ended = keep_revisit_frames(track, frames, cache.fps, embedder, gram)
    assert ended is not None
    with Clock() as score:  # as the live run scores: the gate is remembered
        score_closed_loop(poses, fps=cache.fps, pose_source=atlas.pose_source, kept=kept)
    revisit._GATE_MEMO.clear()
    with Clock() as rescore:  # rescore's closed-loop kernel: the gate computed again
        score_closed_loop(poses, fps=cache.fps, pose_source=atlas.pose_source, kept=kept)
    revisit._GATE_MEMO.clear()
    with Clock() as gate:  # the parts, each alone
        closed_loop_pairs(revisit.return_gate(poses, fps=cache.fps), poses)
    firsts = [kept.frames[int(i)] for i in kept.pairs[:, 0]]
    revisits = [kept.frames[int(j)] for j in kept.pairs[:, 1]]
    with Clock() as features:
        embedder.embed(list(kept.frames.values()))
    with Clock() as grams:
        pair_distances(gram, firsts, revisits)
    with Clock() as closure:
        geometric_closure(
            firsts,
            revisits,
            [poses[int(i)] for i in kept.pairs[:, 0]],
            [poses[int(j)] for j in kept.pairs[:, 1]],
            [kept.intrinsics.get(int(i)) for i in kept.pairs[:, 0]],
            [kept.intrinsics.get(int(j)) for j in kept.pairs[:, 1]],
        )
    per_wall, per_cpu = keep.wall / 200, keep.cpu / 200
    threads = min(MAX_WORKERS, available_cores())
    print(
        f"\nadded cost per episode: {frames} frames at {cache.fps:g} fps, CPU defaults, "
        f"{len(kept.pairs)} pairs of {len(kept.frames)} distinct frames; SIFT, SSIM and Gram "
        f"on {threads} threads (OpenCV's own pool 1); CPU = all threads"
    )
    print(f"  {'':40} {'wall s':>7} {'CPU s':>7}")

    def row(label: str, clock_wall: float, clock_cpu: float) -> None:
        print(f"  {label:40} {clock_wall:7.2f} {clock_cpu:7.2f}")

    row(f"keep every frame ({per_cpu * 1e3:.2f} ms CPU/frame)", per_wall * frames, per_cpu * frames)
    row("episode end", end.wall, end.cpu)
    row("  return gate + pairs (alone)", gate.wall, gate.cpu)
    row("  features, distinct frames (alone)", features.wall, features.cpu)
    row("  Gram, distinct frames (alone)", grams.wall, grams.cpu)
    row("scoring (the gate remembered)", score.wall, score.cpu)
    row("  SIFT closure (alone)", closure.wall, closure.cpu)
    row(
        "total (target <= 2 s for a 60 s loop)",
        per_wall * frames + end.wall + score.wall,
        per_cpu * frames + end.cpu + score.cpu,
    )
    row("rescore's kernel (the gate computed)", rescore.wall, rescore.cpu)


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

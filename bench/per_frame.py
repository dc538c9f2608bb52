"""Where the per-frame path's CPU goes, thread by thread (docs/benchmarks.md#per-frame-path).

Replays the 120 s 640×432 rollout of bench/throughput.py flat out, control metrics only (as
that bench's pipeline row) and, with ``--stack full``, with the default stack; reads every
thread's CPU seconds from /proc while it runs, and prints them per frame beside the bare flow
backend's CPU per pair on the same frames (one thread, as the pipeline's flow thread). CPU
seconds, unlike frames/s, barely move with the machine's load: the flow thread's CPU per frame
against the bare backend's is the per-frame path's own overhead, whatever else runs.

Usage: python bench/per_frame.py [--keep DIR] [--stack control|full]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streameval.replay import ReplaySource, read_rollout

from bench.common import KEYS_120S, write_rollout
from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.perception.analysis import to_analysis_gray
from streameval.perception.flow import create_flow_backend


class ThreadClock:
    """Every thread's CPU seconds (user + system) by name, sampled from /proc every 0.1 s
    (a thread's last reading before it ends is what it cost)."""

    def __init__(self) -> None:
        self.seconds: dict[int, tuple[str, float]] = {}
        self._stop = threading.Event()
        self._tick = os.sysconf("SC_CLK_TCK")
        self._thread = threading.Thread(target=self._run, name="thread-clock", daemon=True)

    def _sample(self) -> None:
        names = {t.native_id: t.name for t in threading.enumerate()}
        for entry in os.listdir("/proc/self/task"):
            try:
                stat = Path(f"/proc/self/task/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            tid = int(entry)
            name = names.get(tid) or self.seconds.get(tid, ("native (decoder)", 0.0))[0]
            self.seconds[tid] = (name, (int(fields[11]) + int(fields[12])) / self._tick)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self._sample()

    def __enter__(self) -> ThreadClock:
        self._sample()
        self._start = dict(self.seconds)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def by_name(self) -> dict[str, float]:
        """CPU seconds spent inside the block, by thread name (threads of one name summed)."""
        out: dict[str, float] = {}
        for tid, (name, s) in self.seconds.items():
            spent = s - self._start.get(tid, (name, 0.0))[1]
            if name != "thread-clock" and spent > 0:
                out[name] = out.get(name, 0.0) + spent
        return out


def bare_flow_cpu_ms(rollout_dir: Path, threads: int | None) -> float:
    """The bare backend's CPU ms per pair, one thread, on the rollout's first 600 frames."""
    import av
    import cv2

    if threads is not None:
        cv2.setNumThreads(threads)
    with av.open(str(rollout_dir / "video.mp4")) as container:
        grays = [
            to_analysis_gray(f.to_ndarray(format="rgb24"))
            for _, f in zip(range(600), container.decode(video=0), strict=False)
        ]
    flow = create_flow_backend("dis-fast")
    t0 = time.thread_time()
    for i in range(len(grays) - 2):
        flow(grays[i], grays[i + 2])
    return 1e3 * (time.thread_time() - t0) / (len(grays) - 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None, help="keep the rollout in this dir")
    parser.add_argument("--stack", choices=["control", "full"], default="control")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="streameval-bench-"))
    r120 = base / "r120"
    if not (r120 / "meta.json").exists():
        write_rollout(r120, KEYS_120S)
    if args.stack == "control":
        config = PipelineConfig(embedding=None, cuts=None, imaging=False, quality_frames=False)
    else:
        config = PipelineConfig()
    load = os.getloadavg()[0]
    bare = bare_flow_cpu_ms(r120, config.opencv_threads)
    t0 = time.perf_counter()
    with ThreadClock() as clock:
        outcome = asyncio.run(
            run_episode(ReplaySource(read_rollout(r120)), config=config, results_dir=base / "out")
        )
    wall = time.perf_counter() - t0
    n = outcome.frames
    print(
        f"120 s rollout, {n} frames, {args.stack} stack: {n / wall:.1f} frames/s"
        f" (load average {load:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    )
    print(f"  bare flow backend, one thread      {bare:6.2f} ms CPU per pair")
    spent = clock.by_name()
    for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  thread {name:27s} {1e3 * seconds / n:6.2f} ms CPU per frame")
    flow_thread = spent.get("perception", 0.0)
    print(
        f"  flow thread / bare flow            {1e3 * flow_thread / n / bare:6.3f}"
        f"   (all threads: {1e3 * sum(spent.values()) / n:.2f} ms per frame)"
    )


if __name__ == "__main__":
    main()

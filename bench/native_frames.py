"""What classifying every received frame costs against the control pipeline
(docs/benchmarks.md#native-frames).

Writes a 60 s 640×432 rollout of the procedural world (``bench.common.write_rollout``), then in
one run:
  - replays it through the control pipeline (control metrics only, as the pipeline row of
    ``bench/throughput.py``) and reads the process's CPU seconds per frame;
  - passes the same decoded frames, and the same frames each sent twice (a doubling server),
    through the native-frame gate of a stream-mode session (``transports/native_gate.py``:
    thumbnail, look-ahead classification, cadence), CPU seconds per received frame;
and prints the ratio, gate over pipeline (the target is below 0.05: classification costs less
than 5 % of the control pipeline's throughput). CPU seconds, not wall time: they barely move
with the machine's load.

Usage: python bench/native_frames.py [--keep DIR] [--seconds S]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streameval.protocol.wire import Frame
from streameval.replay import ReplaySource, read_rollout

from bench.common import KEYS_120S, write_rollout
from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.metrics.native_frames import NATIVE
from streameval.transports.native_gate import NativeGate


def pipeline_cpu_per_frame(rollout_dir: Path, out: Path) -> tuple[float, int]:
    control = PipelineConfig(embedding=None, cuts=None, imaging=False, quality_frames=False)
    source = ReplaySource(read_rollout(rollout_dir))
    cpu = time.process_time()
    outcome = asyncio.run(run_episode(source, config=control, results_dir=out))
    return (time.process_time() - cpu) / outcome.frames, outcome.frames


def decoded_frames(rollout_dir: Path) -> list[object]:
    async def read() -> list[object]:
        from streameval.core.events import EndOfStream, FrameEvent

        source = ReplaySource(read_rollout(rollout_dir))
        images = []
        try:
            while True:
                event = await source.recv()
                if isinstance(event, FrameEvent):
                    images.append(event.image)
        except EndOfStream:
            pass
        await source.close()
        return images

    return asyncio.run(read())


def gate_cpu_per_frame(images: list[object], copies: int) -> tuple[float, int, int]:
    """CPU seconds per received frame through a stream-mode gate; frames, natives."""
    gate = NativeGate(16.0 * copies, classify=True)
    received = 0
    cpu = time.process_time()
    for i, image in enumerate(images):
        for _ in range(copies):
            gate.push(Frame(index=received, key=None, image=image), float(i) / 16.0)  # type: ignore[arg-type]
            received += 1
    gate.flush()
    spent = time.process_time() - cpu
    return spent / received, received, sum(1 for c in gate.classes if c == NATIVE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--seconds", type=float, default=60.0, help="rollout length")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="native-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    keys = KEYS_120S[: max(1, int(args.seconds // 10))]
    rollout = write_rollout(base / "rollout", keys, seconds_per_key=args.seconds / len(keys))
    pipe, frames = pipeline_cpu_per_frame(rollout, base / "out")
    images = decoded_frames(rollout)
    honest, n_honest, native_honest = gate_cpu_per_frame(images, 1)
    double, n_double, native_double = gate_cpu_per_frame(images, 2)
    print(f"rollout: {frames} frames 640x432 (procedural world, x264 CRF 18)")
    print(f"control pipeline: {1000 * pipe:.2f} ms CPU per frame")
    print(
        f"native gate, honest stream: {1000 * honest:.3f} ms CPU per frame "
        f"({native_honest}/{n_honest} native) — ratio to the pipeline {honest / pipe:.4f}"
    )
    print(
        f"native gate, doubled stream: {1000 * double:.3f} ms CPU per received frame "
        f"({native_double}/{n_double} native) — per native frame {2 * double / pipe:.4f} "
        "of the pipeline's"
    )
    print(f"target: ratio < 0.05 -> {'met' if max(honest, 2 * double) / pipe < 0.05 else 'MISSED'}")


if __name__ == "__main__":
    main()

"""What the bridge costs per frame against the same adapter in process
(docs/benchmarks.md#bridge).

An adapter whose ``step`` returns one of a few prepared frames (its own cost is near zero, so
what is measured is the road a frame travels), at 640×360 and 1280×720: ``step`` called in
process, and through the bridge (``attach --python``: a JSON line each way, one copy into the
shared block by the worker, one copy out by us). Wall time per frame, median over the steps,
both in one run; the bridge's added milliseconds are printed, and their share of the frame
budget at 16 fps (62.5 ms).

Usage: python bench/bridge.py [--python PATH] [--frames N]
(default interpreter: this one; any other works the same, streameval need not be there)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streameval.transports.bridge.host import BridgedModel

ADAPTER = textwrap.dedent(
    """
    import numpy as np

    class Prepared:
        name = "prepared"
        fps = 16

        def __init__(self, height, width):
            rng = np.random.default_rng(0)
            self.frames = [rng.integers(0, 255, (height, width, 3), dtype=np.uint8)
                           for _ in range(4)]
            self.k = 0

        def step(self, key):
            self.k += 1
            return self.frames[self.k % 4]

    def at_360p():
        return Prepared(360, 640)

    def at_720p():
        return Prepared(720, 1280)
    """
)


def _per_frame_ms(step: object, frames: int) -> float:
    times = []
    for i in range(frames):
        t = time.perf_counter()
        frame = step("WASD"[i % 4])  # type: ignore[operator]
        image = getattr(frame, "image", frame)
        _ = image[0, 0, 0]  # the pixels are here
        times.append(time.perf_counter() - t)
    return 1000.0 * statistics.median(times[10:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", type=Path, default=Path(sys.executable))
    parser.add_argument("--frames", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        adapter = Path(tmp) / "prepared.py"
        adapter.write_text(ADAPTER)
        sys.path.insert(0, tmp)
        import prepared  # type: ignore[import-not-found]

        print(f"bridge cost per frame ({args.frames} steps, median; interpreter {args.python})")
        print(f"{'size':>10} {'in process':>11} {'bridged':>9} {'added':>9} {'of 62.5 ms':>11}")
        for factory, label in (("at_360p", "640x360"), ("at_720p", "1280x720")):
            local = getattr(prepared, factory)()
            inproc = _per_frame_ms(local.step, args.frames)
            bridged_model = BridgedModel(args.python, str(adapter), factory, url="bench")
            try:
                bridged = _per_frame_ms(bridged_model.step, args.frames)
            finally:
                bridged_model.close()
            added = bridged - inproc
            print(
                f"{label:>10} {inproc:>9.3f}ms {bridged:>7.3f}ms {added:>7.3f}ms "
                f"{100 * added / 62.5:>10.1f}%"
            )


if __name__ == "__main__":
    main()

"""CPU pose estimator on the six memory_loop trajectories (60 s at 24 FPS, 640x432 frames
rendered by the procedural world without poses): gate agreement with the true poses, rotation
error, and speed as a multiple of real time.

    python -m bench.worldatlas_pose_bench [--seconds 60] [--width 640 --height 432]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from streameval.protocol.memory_loop import TRAJECTORIES

from streameval.metrics.worldatlas.revisit import return_gate
from streameval.perception.pose_estimator import CpuPoseEstimator
from tests.metrics.worldatlas.loop_render import render_loop
from tests.perception.test_pose_estimator import rotation_errors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=432)
    args = parser.parse_args()
    agree = 0
    for name in TRAJECTORIES:
        loop = render_loop(
            name, seconds=args.seconds, width=args.width, height=args.height, keep_frames=True
        )
        estimator = CpuPoseEstimator()
        # CPU time, not wall time: on a shared machine the wall clock measures the neighbours.
        start = time.process_time()
        poses = np.array([estimator.update(f) for f in loop.frames])
        per_frame = (time.process_time() - start) / len(loop.frames)
        truth, estimate = return_gate(loop.poses, fps=loop.fps), return_gate(poses, fps=loop.fps)
        agree += truth.passed == estimate.passed
        err = rotation_errors(loop.poses, poses)
        print(
            f"{name:16s} gate true={truth.passed} est={estimate.passed}  "
            f"rotation error mean {err.mean():.2f} max {err.max():.2f} deg  "
            f"{per_frame * 1000:.1f} ms/frame = {1 / (per_frame * loop.fps):.1f}x real time"
        )
    print(f"gate agreement {agree}/{len(TRAJECTORIES)}")


if __name__ == "__main__":
    main()

"""Cost per frame pair of the flow backends on this machine's CPU, at the 640×432 analysis size.

DIS (the CPU default) against our RAFT with random weights in three sizes: the tiny test
configuration (``RAFT_TINY``, what the tests run; *not* a flow network, so its cost is not the
real model's), and the raft_small / raft_large architectures (random weights cost what the real
weights cost: same operations; 12 refinement updates, torchvision's default). Each through the
registered backend (``--flow raft:FILE``), weights saved to a temporary file first. torch's
thread count is printed with each row: on a shared 2-core machine its spinning workers cost
more than they give (run with ``--threads 1`` and without to see).

Usage: python bench/flow_backends.py [--pairs N] [--threads T] [--skip-large]
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

from streameval.constants import ANALYSIS_HEIGHT, ANALYSIS_WIDTH
from streameval.perception.flow import FlowBackend, create_flow_backend, flow_input


def frames() -> tuple[np.ndarray, np.ndarray]:
    """A smooth random texture and the same shifted 4 px right (640×432 RGB)."""
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (ANALYSIS_HEIGHT // 4, (ANALYSIS_WIDTH + 8) // 4, 3), np.uint8)
    big = cv2.resize(base, (ANALYSIS_WIDTH + 8, ANALYSIS_HEIGHT), interpolation=cv2.INTER_CUBIC)
    return np.ascontiguousarray(big[:, 4:-4]), np.ascontiguousarray(big[:, :-8])


def per_pair_ms(backend: FlowBackend, pairs: int) -> float:
    a, b = frames()
    if flow_input(backend) == "gray":
        a, b = cv2.cvtColor(a, cv2.COLOR_RGB2GRAY), cv2.cvtColor(b, cv2.COLOR_RGB2GRAY)
    backend(a, b)  # warm-up (allocations, first-call dispatch)
    t0 = time.perf_counter()
    for _ in range(pairs):
        backend(a, b)
    return (time.perf_counter() - t0) / pairs * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument("--skip-large", action="store_true", help="leave out raft_large")
    args = parser.parse_args()
    import torch

    from streameval.perception import raft_net

    if args.threads:
        torch.set_num_threads(args.threads)
    cv2.setNumThreads(1)
    threads = torch.get_num_threads()
    print(f"640×432, torch threads {threads}, {args.pairs} pairs after one warm-up")
    print(f"  dis-fast      {per_pair_ms(create_flow_backend('dis-fast'), args.pairs):9.1f} ms")
    sizes = [("tiny (tests)", raft_net.RAFT_TINY), ("raft_small", raft_net.RAFT_SMALL)]
    if not args.skip_large:
        sizes.append(("raft_large", raft_net.RAFT_LARGE))
    with tempfile.TemporaryDirectory() as tmp:
        for label, config in sizes:
            torch.manual_seed(0)
            path = Path(tmp) / f"{label.split()[0]}.pth"
            torch.save(raft_net.RAFT(config).state_dict(), path)
            ms = per_pair_ms(create_flow_backend(f"raft:{path}"), args.pairs)
            print(f"  {label:13s} {ms:9.1f} ms  (random weights, 12 updates)")


if __name__ == "__main__":
    main()

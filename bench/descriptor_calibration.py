"""Calibration of the CPU descriptor's mutation threshold, as measured
(docs/methods.md#cpu-defaults-and-backends).

Prints, for every scene family (plain noise textures, large flat colours, high-frequency
detail, outdoor-like gradients; ``tests/perception/scene_families.py``) and turn speed
(15/45/90 °/s), the distribution of adjacent-sample distances ``1 − cos`` on clean motion
(Local Memory's samples, 0.5 s apart) on Local Memory's wider kernel — p50 / p95 / max, as
distances and in units of its threshold — then the distances at real mutations (scene swaps,
cuts between families, the procedural world's hard cuts). Clean motion must sit well under
1.0 τ, mutations above it.

Usage: python bench/descriptor_calibration.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from streameval.perception.embedding import ColorHistRbf
from tests.perception.scene_families import clean_distances, mutation_distances, summary


def main() -> None:
    backend = ColorHistRbf()
    cal = backend.calibration
    tau = cal.tau_mut
    print(f"{backend.name}: Local Memory's scale {cal.to_json()} (distances below on it)")
    print(f"{'family':<9}{'speed':<8}{'p50':>7}{'p95':>7}{'max':>7}   in τ: p50 / p95 / max")
    for (family, speed), raw in clean_distances(backend).items():
        d = cal.local_distance(raw)
        p50, p95, mx = summary(d)
        print(
            f"{family:<9}{speed:<8}{p50:7.3f}{p95:7.3f}{mx:7.3f}"
            f"   {p50 / tau:.2f} / {p95 / tau:.2f} / {mx / tau:.2f}"
        )
    print("mutations (min / p50 / max, and min in τ):")
    for name, raw in mutation_distances(backend).items():
        d = cal.local_distance(raw)
        lo, mid, hi = float(d.min()), float(np.median(d)), float(d.max())
        print(f"  {name:<15} {lo:.3f} / {mid:.3f} / {hi:.3f}   min {lo / tau:.2f} τ")


if __name__ == "__main__":
    main()

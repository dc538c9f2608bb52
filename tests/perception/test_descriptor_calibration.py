"""The CPU descriptor's two calibrated scales (docs/methods.md#cpu-defaults-and-backends): Local
Memory reads a wider kernel (σ_L² = 1.0) on which clean turns, the fast 90 °/s one included, stay
under its threshold and real mutations land above it; Revisit Memory keeps the embedding's own
σ² = 0.2 (its forget contrast: tests/engine/test_memory_validity.py and the test below).

Measured on Local Memory's kernel (bench/descriptor_calibration.py; τ = 0.34, clean p50 / p95 /
max in units of τ): noise ≤ 0.01 at every speed; slow (15 °/s) ≤ 0.11 max on every family; normal
(45 °/s) flat 0.09/0.27/0.40, hifreq 0.01/0.11/0.25, outdoor 0.02/0.07/0.19; fast (90 °/s) flat
0.22/0.71/0.87, hifreq 0.04/0.47/0.70, outdoor 0.03/0.35/0.50. Swaps, cuts and procedural hard
cuts ≥ 1.10 τ. Before the split (τ = 0.6 on σ² = 0.2) the fast turn over flat colours reached
1.38 τ and scored Local Memory 50 / 83 / 67 on its three seeds.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import numpy.typing as npt
import pytest

from streameval.constants import TAU_MUT
from streameval.metrics.memory.local_memory import local_memory
from streameval.perception.embedding import SEED_CALIBRATION, ColorHistRbf
from tests.perception.scene_families import (
    FAMILIES,
    FPS,
    PX_PER_DEG,
    SEEDS,
    SPEEDS,
    clean_distances,
    embed_turn,
    mutation_distances,
    summary,
)

TAU = ColorHistRbf().calibration.tau_mut


@cache
def clean() -> dict[tuple[str, str], npt.NDArray[np.float64]]:
    backend = ColorHistRbf()
    return {k: backend.calibration.local_distance(d) for k, d in clean_distances(backend).items()}


def test_calibration_is_recorded_and_dinov2_keeps_the_seed_threshold() -> None:
    cal = ColorHistRbf().calibration
    assert cal.tau_mut == 0.34 and abs(cal.distance_scale * cal.tau_mut - TAU_MUT) < 1e-15
    assert cal.to_json() == {
        "tau_mut": 0.34,
        "distance_scale": TAU_MUT / 0.34,
        "local_exponent": 0.2,
        "local_sigma2": 1.0,
        "revisit_sigma2": 0.2,
    }
    assert SEED_CALIBRATION.to_json() == {"tau_mut": TAU_MUT, "distance_scale": 1.0}
    assert SEED_CALIBRATION.local_exponent == 1.0  # DINOv2: one distance for both metrics
    assert SEED_CALIBRATION.tau_mut == TAU_MUT and SEED_CALIBRATION.distance_scale == 1.0


@pytest.mark.long
def test_clean_motion_stays_well_under_the_threshold_on_every_family() -> None:
    lines = []
    for (family, speed), d in clean().items():
        p50, p95, mx = (v / TAU for v in summary(d))
        lines.append(f"{family:<8}{speed:<7} p50 {p50:.2f} p95 {p95:.2f} max {mx:.2f} τ")
        if family == "noise":
            assert mx < 0.1, (family, speed, mx)
        if speed == "slow":  # margin ≥ 5× on the worst pair
            assert mx < 0.2, (family, speed, mx)
        elif speed == "normal":  # the procedural world's turn rate: margin ≥ 2× on the worst
            assert p95 < 0.35 and mx < 0.5, (family, speed, p95, mx)
        else:  # 90 °/s: most of the view is new between samples, and none is over
            assert p95 < 0.8 and mx < 0.95, (family, speed, p95, mx)
    print("\n" + "\n".join(lines))


def test_real_mutations_land_above_the_threshold() -> None:
    backend = ColorHistRbf()
    for name, raw in mutation_distances(backend).items():
        d = backend.calibration.local_distance(raw)
        print(f"\n{name}: min {d.min():.3f} = {d.min() / TAU:.2f} τ")
        assert d.min() > 1.08 * TAU, name


@cache
def _turn_rows(family: str, seed: int, speed: str) -> npt.NDArray[np.float64]:
    """One clean turn's descriptor rows: the tests score each turn on two scales, the rows
    are the same for both (read-only)."""
    rows = embed_turn(ColorHistRbf(), family, seed, speed)
    rows.setflags(write=False)
    return rows


def _turn_scores(family: str, speed: str, **scale: float) -> list[float]:
    out = []
    for seed in SEEDS:
        rows = _turn_rows(family, seed, speed)
        sx = np.full(len(rows) - 2, 2 * SPEEDS[speed] * PX_PER_DEG / FPS)
        result = local_memory(sx, np.zeros_like(sx), rows, [], FPS, **scale)
        assert result.normalized is not None
        out.append(result.normalized)
    return out


def test_a_clean_turn_keeps_local_memory_near_100() -> None:
    """Before calibration (raw distances against τ = 0.10) a clean turn lost Local Memory."""
    cal = ColorHistRbf().calibration
    scale = {"distance_scale": cal.distance_scale, "local_exponent": cal.local_exponent}
    before = [s for f in ("flat", "hifreq", "outdoor") for s in _turn_scores(f, "normal")]
    after = [s for f in ("flat", "hifreq", "outdoor") for s in _turn_scores(f, "normal", **scale)]
    print(f"\nLocal Memory of clean turns: before {before}, after {after}")
    assert min(after) >= 95.0
    assert min(before) < 80.0  # the uncalibrated symptom, reproduced


@pytest.mark.long
def test_a_fast_clean_turn_keeps_local_memory_on_every_family() -> None:
    """90 °/s: on σ² = 0.2 with τ = 0.6 the flat-colour turn lost Local Memory (50–83); Local
    Memory's wider kernel keeps every family at 100."""
    cal = ColorHistRbf().calibration
    old = {"distance_scale": TAU_MUT / 0.6}  # the former single-scale calibration
    new = {"distance_scale": cal.distance_scale, "local_exponent": cal.local_exponent}
    lines = []
    for family in FAMILIES:
        before, after = _turn_scores(family, "fast", **old), _turn_scores(family, "fast", **new)
        lines.append(f"{family:<8} before {before} after {after}")
        assert min(after) == 100.0, (family, after)
    print("\n" + "\n".join(lines))
    assert "before [50.0" in lines[list(FAMILIES).index("flat")]  # the symptom, reproduced


def test_revisit_memory_keeps_the_embedding_scale() -> None:
    """Revisit Memory reads ``1 − cos`` on σ² = 0.2 as it is: its forget contrast (a 360° turn
    back to the start: 0.000 clean, 0.12–0.26 in the forget world) is the embedding's own."""
    cal = ColorHistRbf().calibration
    d = np.array([0.0, 0.12, 0.26])
    assert cal.to_json()["revisit_sigma2"] == 0.2
    # the Local kernel would squash the contrast five-fold: that is why Revisit keeps its own
    assert np.all(cal.local_distance(d)[1:] < d[1:] / 4)

"""Model-level aggregation formulas, checked against naive references written here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.leaderboard.helpers import (
    cell,
    control,
    missing,
    not_applicable,
    official,
    table_of,
    write_model,
)

# Aggregation formulas against naive references
# --------------------------------------------------------------------------------------------


def test_control_pools_segments_not_episodes(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    per_episode = [rng.uniform(0, 1, size=n).tolist() for n in (1, 4, 7)]
    write_model(
        tmp_path,
        "m",
        [{"direction_purity_trans": control(v, extra=2)} for v in per_episode],
    )
    c = cell(table_of(tmp_path), "m", "direction_purity_trans")
    pooled = 100.0 * float(np.mean(np.concatenate(per_episode)))
    episode_mean = 100.0 * float(np.mean([np.mean(v) for v in per_episode]))
    assert c.value == pytest.approx(pooled, abs=1e-9)
    assert abs(pooled - episode_mean) > 0.1  # the fixture tells the two apart
    assert (c.method, c.n_units) == ("pooled_segments", 12)


def test_direction_accuracy_clamps_the_pooled_mean(tmp_path: Path) -> None:
    # Episode 1 alone would be positive, the pool is negative: the column is 100·max(0, mean).
    write_model(
        tmp_path,
        "m",
        [
            {"direction_accuracy_trans": control([0.5], signed=True)},
            {"direction_accuracy_trans": control([-0.6, -0.6], signed=True)},
        ],
    )
    assert cell(table_of(tmp_path), "m", "direction_accuracy_trans").value == 0.0
    write_model(
        tmp_path / "b",
        "n",
        [
            {"direction_accuracy_rot": control([0.9, -0.3], signed=True)},
            {"direction_accuracy_rot": control([0.6], signed=True)},
        ],
    )
    c = cell(table_of(tmp_path / "b"), "n", "direction_accuracy_rot")
    assert c.value == pytest.approx(100.0 * np.mean([0.9, -0.3, 0.6]))


def test_control_falls_back_to_episode_mean_without_segments(tmp_path: Path) -> None:
    write_model(
        tmp_path,
        "m",
        [
            {"motion_stability_rot": control([0.2, 0.2, 0.2])},
            {"motion_stability_rot": official(80.0)},  # no segment details
        ],
    )
    c = cell(table_of(tmp_path), "m", "motion_stability_rot")
    assert c.method == "episode_mean_fallback"
    assert c.value == pytest.approx(50.0)


def test_control_pooled_bounds(tmp_path: Path) -> None:
    write_model(
        tmp_path,
        "m",
        [
            {"response_latency_trans": control([0.2, 0.4])},
            {"response_latency_trans": control([0.6, 0.8])},
            {"response_latency_trans": missing("backend failed")},
        ],
    )
    write_model(
        tmp_path,
        "n",
        [
            {"direction_accuracy_trans": control([0.5, 0.5], signed=True)},
            {"direction_accuracy_trans": missing("x")},
        ],
    )
    table = table_of(tmp_path)
    lat = cell(table, "m", "response_latency_trans")
    # 4 measured segments over 2 episodes: the missing one is assumed to carry 2, at 0 or 1.
    assert lat.value == pytest.approx(50.0)
    assert lat.lower == pytest.approx(100.0 * 2.0 / 6.0)
    assert lat.upper == pytest.approx(100.0 * 4.0 / 6.0)
    acc = cell(table, "n", "direction_accuracy_trans")
    # One measured episode of two segments (sum 1.0); two unknown segments at −1 or 1.
    assert acc.lower == pytest.approx(0.0)
    assert acc.upper == pytest.approx(100.0 * 3.0 / 4.0)


def test_local_memory_formula(tmp_path: Path) -> None:
    cuts = [True, False, False, False]
    rates = [0.1, 0.2, 0.0, 0.3]
    write_model(
        tmp_path,
        "m",
        [
            {
                "local_memory": official(
                    100.0 * (1 - c) * (1 - r), {"hard_cut": c, "mutation_rate": r}
                )
            }
            for c, r in zip(cuts, rates, strict=True)
        ]
        + [{"local_memory": not_applicable("frozen")}],
    )
    c = cell(table_of(tmp_path), "m", "local_memory")
    expected = 100.0 * (1 - np.mean(cuts)) * (1 - np.mean(rates))
    naive_episode_mean = np.mean(
        [100.0 * (1 - c) * (1 - r) for c, r in zip(cuts, rates, strict=True)]
    )
    assert c.value == pytest.approx(expected)
    assert abs(expected - naive_episode_mean) > 0.1
    assert (c.status, c.measured, c.total) == ("official", 4, 5)


def test_local_memory_bounds(tmp_path: Path) -> None:
    details = {"hard_cut": False, "mutation_rate": 0.2}
    write_model(
        tmp_path,
        "m",
        [{"local_memory": official(80.0, details)}, {"local_memory": missing("cut detector")}],
    )
    c = cell(table_of(tmp_path), "m", "local_memory")
    assert c.value == pytest.approx(80.0)
    assert c.lower == pytest.approx(100.0 * (1 - 1 / 2) * (1 - 1.2 / 2))
    assert c.upper == pytest.approx(100.0 * 1.0 * (1 - 0.2 / 2))


def test_revisit_memory_is_the_mean_of_episode_scores(tmp_path: Path) -> None:
    # final_master averages the episodes' C2 (golden revisit groups), it does not pool pairs.
    pairs = [[0.1, 0.2], [0.4], [0.05, 0.05, 0.3]]
    write_model(
        tmp_path,
        "m",
        [
            {"revisit_memory": official(100.0 / (1 + float(np.mean(d))), {"pair_distances": d})}
            for d in pairs
        ],
    )
    c = cell(table_of(tmp_path), "m", "revisit_memory")
    assert c.value == pytest.approx(np.mean([100.0 / (1.0 + np.mean(d)) for d in pairs]))
    assert c.n_units == 3


def test_global_memory_formula_and_bounds(tmp_path: Path) -> None:
    es = [0.05, 0.15]
    write_model(
        tmp_path,
        "m",
        [{"global_memory": official(100.0 / (1 + e / 0.05), {"e": e})} for e in es]
        + [{"global_memory": missing("reconstruction failed")}],
    )
    c = cell(table_of(tmp_path), "m", "global_memory")
    assert c.value == pytest.approx(100.0 / (1.0 + 0.1 / 0.05))
    assert c.lower == 0.0
    assert c.upper == pytest.approx(100.0 / (1.0 + (0.2 / 3) / 0.05))


def test_bounds_contain_the_value(tmp_path: Path) -> None:
    metrics = {
        "revisit_memory": official(80.0, {"pair_distances": [0.2, 0.3]}),
        "direction_purity_rot": control([0.3, 0.9]),
        "aesthetic_quality": official(40.0),
    }
    write_model(tmp_path, "m", [metrics, metrics, {}])
    for name in ("revisit_memory", "direction_purity_rot", "aesthetic_quality"):
        c = cell(table_of(tmp_path), "m", name)
        assert c.status == "partial"
        assert c.lower is not None and c.upper is not None and c.value is not None
        assert 0.0 <= c.lower <= c.value <= c.upper <= 100.0


def test_local_memory_skips_none_mutation_rate(tmp_path: Path) -> None:
    # A hard cut that left no countable pair: official 0, mutation_rate None (local_memory.py).
    write_model(
        tmp_path,
        "m",
        [
            {"local_memory": official(0.0, {"hard_cut": True, "mutation_rate": None})},
            {"local_memory": official(80.0, {"hard_cut": False, "mutation_rate": 0.2})},
        ],
    )
    c = cell(table_of(tmp_path), "m", "local_memory")
    assert c.method == "episode_cut_share_and_mean_mutation_rate"
    assert c.value == pytest.approx(100.0 * 0.5 * 0.8)

"""WorldAtlas publication rules: normalization families, reducers, the leaderboard task score,
protocol state (docs/methods.md#worldatlas-scale, docs/methods.md#suites)."""

from __future__ import annotations

import pytest

from streameval.metrics.worldatlas.publication import (
    MEMORY_LOOP_NORMALIZATION,
    EpisodeTask,
    MinMax,
    ZScore,
    arithmetic_mean,
    geometric_mean,
    task_score,
    task_value,
)


def test_minmax_reverses_lower_is_better_and_clamps() -> None:
    assert MEMORY_LOOP_NORMALIZATION["keystroke_natet"](0.2) == pytest.approx(0.8)
    assert MEMORY_LOOP_NORMALIZATION["memory_scene_f1"](0.7) == pytest.approx(0.7)
    assert MinMax(10.0, 20.0)(25.0) == 1.0 and MinMax(10.0, 20.0)(5.0) == 0.0
    assert MinMax(10.0, 20.0, higher_is_better=False)(12.5) == pytest.approx(0.75)
    with pytest.raises(ValueError):
        MinMax(0.0, 1.0)(float("nan"))


def test_zscore_maps_onto_its_sub_interval() -> None:
    z = ZScore(mean=5.0, std=2.0, z_clip=2.0, out_lower=0.2, out_upper=0.8)
    assert z(5.0) == pytest.approx(0.5)
    assert z(9.0) == pytest.approx(0.8) and z(100.0) == pytest.approx(0.8)
    assert z(1.0) == pytest.approx(0.2)
    assert ZScore(5.0, 2.0, higher_is_better=False)(7.0) < 0.5


def test_reducers() -> None:
    assert geometric_mean([0.25, 1.0]) == pytest.approx(0.5)
    assert geometric_mean([0.0, 1.0]) == 0.0
    assert arithmetic_mean([0.2, 0.4, 0.9]) == pytest.approx(0.5)


def test_task_values() -> None:
    assert task_value(EpisodeTask(gate_passed=False, scene_f1=0.9)) == 0.0  # gate failure: 0
    assert task_value(EpisodeTask(gate_passed=True, scene_f1=0.9)) == 0.9
    assert task_value(EpisodeTask(gate_passed=True, scene_f1=None)) is None  # no cloud support
    assert task_value(EpisodeTask(gate_passed=None, scene_f1=None)) is None  # missing poses
    assert task_value(EpisodeTask(gate_passed=False, scene_f1=0.5, valid_inputs=False)) is None


def test_incomplete_coverage_leaves_full_suite_null_with_bounds() -> None:
    episodes = [EpisodeTask(True, 0.9)] * 477 + [EpisodeTask(False, 0.3)] * 2
    episodes += [EpisodeTask(None, None)]
    score = task_score(episodes)
    assert score.coverage == "479/480"
    assert score.full_suite is None
    assert score.mean == pytest.approx(477 * 0.9 / 479)
    low, high = score.bounds  # type: ignore[misc]
    assert low == pytest.approx(477 * 0.9 / 480) and high == pytest.approx((477 * 0.9 + 1) / 480)
    complete = task_score(episodes[:-1])
    assert complete.full_suite == pytest.approx(complete.mean)

"""WorldAtlas columns in the master table: shown with memory_loop results only, counted over
memory_loop episodes only, and WorldAtlas's scene-F1 task score with coverage, bounds and a null
full-suite value when coverage is incomplete."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streameval.core.metric_result import MetricResult
from streameval.leaderboard import cell_text, episode_cell, model_episodes, table_columns
from streameval.metrics.aggregation import scene_task_score
from tests.leaderboard.helpers import (
    cell,
    missing,
    not_applicable,
    official,
    table_of,
    write_episode,
)

WORLDATLAS = (
    "memory_return_gate",
    "keystroke_natet",
    "keystroke_nater",
    "memory_scene_f1",
    "memory_revisit_fidelity",
    "memory_geometric_closure",
    "memory_rendering_recovery",
    "memory_half_life",
)


def scene(f1: float, gate_passed: bool) -> dict[str, Any]:
    """memory_scene_f1 as the kernel writes it: the conditional F1, and T_i in details."""
    task = f1 if gate_passed else 0.0
    return official(f1, {"gate_passed": gate_passed, "task_value": task})


def test_columns_appear_only_with_memory_loop_results(tmp_path: Path) -> None:
    write_episode(tmp_path / "a", "m", "001", {"perceptual_quality": official(50.0)})
    names = [c.name for c in table_of(tmp_path / "a").columns]
    assert not set(WORLDATLAS) & set(names)
    write_episode(tmp_path / "b", "m", "yaw_loop_360", {}, suite="memory_loop")
    names = [c.name for c in table_of(tmp_path / "b").columns]
    assert names[-8:] == list(WORLDATLAS)
    assert [c.name for c in table_columns(["memory_loop"])][-8:] == list(WORLDATLAS)


def test_task_score_is_the_mean_of_t_not_of_the_conditional_f1(tmp_path: Path) -> None:
    loops = [scene(0.9, True), scene(0.8, True), scene(0.7, False)]  # the failure counts 0
    for i, metric in enumerate(loops):
        write_episode(tmp_path, "m", f"loop{i}", {"memory_scene_f1": metric}, suite="memory_loop")
    c = cell(table_of(tmp_path), "m", "memory_scene_f1")
    assert c.status == "official" and c.method == "task_score"
    assert c.value == pytest.approx((0.9 + 0.8 + 0.0) / 3)  # WorldAtlas's [0, 1]
    assert (c.measured, c.total) == (3, 3)


def test_incomplete_coverage_is_partial_with_seed_003_bounds(tmp_path: Path) -> None:
    """479 measured of 480 (here 3 of 4): value over M, bounds over N, full-suite null."""
    loops: list[dict[str, Any]] = [scene(0.9, True), scene(0.6, True), scene(0.5, False)]
    loops.append(not_applicable("no depth (depth_metric.npy ... are needed)"))
    for i, metric in enumerate(loops):
        write_episode(tmp_path, "m", f"loop{i}", {"memory_scene_f1": metric}, suite="memory_loop")
    c = cell(table_of(tmp_path), "m", "memory_scene_f1")
    total = 0.9 + 0.6 + 0.0
    assert c.status == "partial"  # the full-suite score is unknown
    assert c.value == pytest.approx(total / 3)
    assert (c.measured, c.total, c.n_missing, c.n_not_applicable) == (3, 4, 1, 0)
    assert c.lower == pytest.approx(total / 4)
    assert c.upper == pytest.approx((total + 1.0) / 4)
    assert cell_text(c) == "0.5000 (3/4) [0.3750, 0.6250]"  # four decimals, as published


def test_coverage_counts_memory_loop_episodes_only(tmp_path: Path) -> None:
    write_episode(tmp_path, "m", "001_WR", {"perceptual_quality": official(40.0)})
    write_episode(tmp_path, "m", "002_AD", {"perceptual_quality": official(60.0)})
    gate = official(1.0, {"gate_passed": True})
    for i in range(2):
        metrics = {"memory_scene_f1": scene(0.5, True), "memory_return_gate": gate}
        write_episode(tmp_path, "m", f"loop{i}", metrics, suite="memory_loop")
    table = table_of(tmp_path)
    for name in ("memory_scene_f1", "memory_return_gate"):
        c = cell(table, "m", name)
        assert (c.status, c.measured, c.total) == ("official", 2, 2)
    # the worldmark episodes are outside the WorldAtlas metrics' domain, not missing
    rows = {r.record.episode: r for r in model_episodes(table, "m")}
    drill = rows["001_WR"].cells["memory_scene_f1"]
    assert drill.status == "not_applicable" and "memory_loop" in drill.reasons[0]
    assert episode_cell(rows["loop0"].record, "memory_scene_f1").value == 0.5


def test_model_without_loops_in_a_table_with_loops(tmp_path: Path) -> None:
    write_episode(tmp_path, "w", "001_WR", {"perceptual_quality": official(40.0)})
    write_episode(
        tmp_path, "m", "loop0", {"memory_scene_f1": scene(0.5, True)}, suite="memory_loop"
    )
    c = cell(table_of(tmp_path), "w", "memory_scene_f1")
    assert c.status == "not_applicable" and c.value is None and c.total == 0
    assert cell_text(c) == "n/a"


def test_nothing_measured_keeps_the_episode_statuses(tmp_path: Path) -> None:
    write_episode(
        tmp_path, "m", "a", {"memory_scene_f1": not_applicable("no depth")}, suite="memory_loop"
    )
    write_episode(
        tmp_path, "n", "a", {"memory_scene_f1": missing("bad depth")}, suite="memory_loop"
    )
    table = table_of(tmp_path)
    assert cell(table, "m", "memory_scene_f1").status == "not_applicable"
    assert cell(table, "n", "memory_scene_f1").status == "missing"


def test_a_file_without_task_values_is_never_averaged_as_conditional_f1(tmp_path: Path) -> None:
    old = official(0.8, {"gate_passed": False})  # no task_value: another version's file
    write_episode(tmp_path, "m", "a", {"memory_scene_f1": old}, suite="memory_loop")
    c = cell(table_of(tmp_path), "m", "memory_scene_f1")
    assert c.status == "missing" and c.value is None


def test_aggregator_bounds_match_seed_003() -> None:
    measured = [MetricResult.official(0.9, 0.9, {"task_value": 0.9})] * 477
    measured += [MetricResult.official(0.3, 0.3, {"task_value": 0.0})] * 2
    agg = scene_task_score(measured, 1)
    assert agg.value == pytest.approx(477 * 0.9 / 479)
    assert agg.lower == pytest.approx(477 * 0.9 / 480)
    assert agg.upper == pytest.approx((477 * 0.9 + 1) / 480)
    assert agg.n_units == 479


def test_a_version_1_file_is_read_onto_worldatlas_scale(tmp_path: Path) -> None:
    """streameval.scores/1 stored WorldAtlas metrics x100; they are read on [0, 1], WorldMark
    columns untouched."""
    metrics = {
        "memory_return_gate": official(100.0, {"gate_passed": True}),
        "memory_scene_f1": official(80.0, {"gate_passed": True, "task_value": 0.8}),
        "perceptual_quality": official(40.0),
    }
    write_episode(tmp_path, "m", "loop0", metrics, suite="memory_loop", fmt="streameval.scores/1")
    table = table_of(tmp_path)
    rows = {r.record.episode: r for r in model_episodes(table, "m")}
    record = rows["loop0"].record
    assert record.metrics["memory_return_gate"].normalized == 1.0
    assert record.metrics["memory_scene_f1"].normalized == pytest.approx(0.8)
    assert record.metrics["perceptual_quality"].normalized == 40.0
    assert cell_text(cell(table, "m", "memory_return_gate")) == "1.0000"
    assert cell(table, "m", "memory_scene_f1").value == pytest.approx(0.8)

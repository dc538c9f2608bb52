"""Master-table scoring: aggregation formulas, statuses, coverage, bounds, ranks, exclusions.

Fixtures are small scores.json files written by code into tmp_path; every aggregate is checked
against a naive numpy reference written here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streameval.errors import BadInputError
from streameval.scoring import (
    COLUMN_NAMES,
    COLUMNS,
    INCLUDE_ALL,
    Cell,
    ExclusionRule,
    MasterTable,
    build_table,
    cell_text,
    episode_segments,
    find_scores_files,
    format_value,
    load_episode,
    load_results,
    model_episodes,
    rank_values,
    sort_rows,
    tabulate,
)

Metrics = dict[str, dict[str, Any]]


# --------------------------------------------------------------------------------------------
# Fixture builders
# --------------------------------------------------------------------------------------------


def official(normalized: float, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "raw": normalized / 100.0,
        "normalized": normalized,
        "status": "official",
        "reason": None,
        "details": details or {},
    }


def not_applicable(reason: str) -> dict[str, Any]:
    return {"raw": None, "normalized": None, "status": "not_applicable", "reason": reason}


def missing(reason: str) -> dict[str, Any]:
    return {"raw": None, "normalized": None, "status": "missing", "reason": reason}


def control(values: list[float], *, signed: bool = False, extra: int = 0) -> dict[str, Any]:
    """A control metric as control.py writes it: scored segments, plus ``extra``
    not_applicable and dropped segments that must never be averaged in."""
    segments: list[dict[str, Any]] = [
        {"index": i, "key": "W", "family": "fwd", "status": "scored", "value": v, "reason": None}
        for i, v in enumerate(values)
    ]
    for j in range(extra):
        segments.append({"index": 100 + j, "status": "not_applicable", "reason": "few samples"})
        segments.append({"index": 200 + j, "status": "dropped", "value": 5.0, "reason": "range"})
    raw = float(np.mean(values))
    normalized = 100.0 * max(0.0, raw) if signed else 100.0 * raw
    return official(normalized, {"segments": segments, "n_scored": len(values)})


def write_episode(
    root: Path,
    model: str,
    episode: str,
    metrics: Metrics,
    *,
    suite: str = "worldmark",
    complete: bool = True,
) -> Path:
    path = root / model / episode / "scores.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "format": "streameval.scores/1",
        "model": model,
        "suite": suite,
        "episode": episode,
        "fps": 16,
        "frames": 320,
        "complete": complete,
        "metrics": metrics,
    }
    path.write_text(json.dumps(doc))
    return path


def write_model(root: Path, model: str, per_episode: list[Metrics], **kw: Any) -> None:
    for i, metrics in enumerate(per_episode):
        write_episode(root, model, f"{i:03d}", metrics, **kw)


def table_of(root: Path, **kw: Any) -> MasterTable:
    kw.setdefault("rule", INCLUDE_ALL)
    return tabulate([root], **kw)


def cell(table: MasterTable, model: str, column: str) -> Cell:
    return table.row(model).cells[column]


# --------------------------------------------------------------------------------------------
# Columns
# --------------------------------------------------------------------------------------------


def test_columns_follow_design_order() -> None:
    assert COLUMN_NAMES == (
        "direction_accuracy_trans",
        "direction_accuracy_rot",
        "direction_purity_trans",
        "direction_purity_rot",
        "motion_stability_trans",
        "motion_stability_rot",
        "response_latency_trans",
        "response_latency_rot",
        "local_memory",
        "revisit_memory",
        "global_memory",
        "perceptual_quality",
        "aesthetic_quality",
    )
    assert all(c.label and c.short for c in COLUMNS)


# --------------------------------------------------------------------------------------------
# Ranking and colour
# --------------------------------------------------------------------------------------------


def _quality_models(root: Path, values: dict[str, float]) -> MasterTable:
    for model, v in values.items():
        write_model(root, model, [{"perceptual_quality": official(v)}])
    return table_of(root)


def _ranks(table: MasterTable, column: str = "perceptual_quality") -> dict[str, str | None]:
    return {r.model: r.cells[column].rank for r in table.rows}


def test_best_second_worst(tmp_path: Path) -> None:
    table = _quality_models(tmp_path, {"a": 70.0, "b": 90.0, "c": 50.0, "d": 80.0})
    assert _ranks(table) == {"a": None, "b": "best", "c": "worst", "d": "second"}


def test_ties_share_the_colour(tmp_path: Path) -> None:
    table = _quality_models(tmp_path, {"a": 90.0, "b": 90.0, "c": 80.0, "d": 85.0, "e": 80.0})
    assert _ranks(table) == {"a": "best", "b": "best", "c": "worst", "d": "second", "e": "worst"}


def test_two_distinct_values_have_no_second() -> None:
    # The second distinct value is also the lowest: worst wins.
    assert rank_values({"a": 90.0, "b": 80.0, "c": 80.0}) == {
        "a": "best",
        "b": "worst",
        "c": "worst",
    }


def test_rounding_before_ranking() -> None:
    # 90.004 and 90.001 both display as 90.00: they tie for best, as the reader sees them.
    ranks = rank_values({"a": 90.004, "b": 90.001, "c": 89.996, "d": 70.0, "e": 80.0})
    assert ranks == {"a": "best", "b": "best", "c": "best", "d": "worst", "e": "second"}
    assert format_value(90.004) == format_value(89.996) == "90.00"


def test_fewer_than_three_models_or_all_equal_are_not_coloured() -> None:
    assert rank_values({"a": 90.0, "b": 10.0}) == {}
    assert rank_values({"a": 90.0}) == {}
    assert rank_values({"a": 50.0, "b": 50.004, "c": 49.999}) == {}
    assert rank_values({"a": 90.0, "b": 10.0, "c": None}) == {}


def test_partial_cells_are_not_ranked(tmp_path: Path) -> None:
    for model, v in {"a": 90.0, "b": 80.0, "c": 70.0}.items():
        write_model(tmp_path, model, [{"perceptual_quality": official(v)}])
    write_model(tmp_path, "d", [{"perceptual_quality": official(99.0)}, {}])  # one missing
    table = table_of(tmp_path)
    assert cell(table, "d", "perceptual_quality").status == "partial"
    assert _ranks(table) == {"a": "best", "b": "second", "c": "worst", "d": None}


def test_excluded_models_are_not_ranked(tmp_path: Path) -> None:
    for model, v in {"a": 90.0, "b": 80.0, "c": 70.0, "d": 10.0}.items():
        write_model(tmp_path, model, [{"perceptual_quality": official(v)}])
    table = table_of(tmp_path, exclude={"d"})
    assert _ranks(table) == {"a": "best", "b": "second", "c": "worst"}


# --------------------------------------------------------------------------------------------
# Statuses, coverage, bounds
# --------------------------------------------------------------------------------------------


def test_not_applicable_is_not_averaged_and_shows_coverage(tmp_path: Path) -> None:
    write_model(
        tmp_path,
        "m",
        [
            {"perceptual_quality": official(80.0), "aesthetic_quality": not_applicable("no qa")},
            {
                "perceptual_quality": not_applicable("frozen"),
                "aesthetic_quality": not_applicable("no qa"),
            },
            {"perceptual_quality": official(60.0), "aesthetic_quality": not_applicable("no qa")},
        ],
    )
    table = table_of(tmp_path)
    pq = cell(table, "m", "perceptual_quality")
    assert pq.value == pytest.approx(70.0)  # neither 0 nor 100 imputed for the n/a episode
    assert pq.status == "official"
    assert (pq.measured, pq.total, pq.n_not_applicable, pq.n_missing) == (2, 3, 1, 0)
    assert pq.lower is None and pq.upper is None
    assert cell_text(pq) == "70.00 (2/3)"
    aq = cell(table, "m", "aesthetic_quality")
    assert aq.status == "not_applicable" and aq.value is None
    assert aq.reasons == ("no qa",)  # deduplicated
    assert cell_text(aq) == "n/a"


def test_missing_makes_partial_with_seed003_bounds(tmp_path: Path) -> None:
    write_model(
        tmp_path,
        "m",
        [
            {"perceptual_quality": official(80.0)},
            {"perceptual_quality": official(60.0)},
            {"perceptual_quality": missing("backend failed")},
            {"perceptual_quality": not_applicable("frozen")},
        ],
    )
    c = cell(table_of(tmp_path), "m", "perceptual_quality")
    assert c.status == "partial"
    assert c.value == pytest.approx(70.0)
    # N' = measured + missing = 3; bounds [Σv/N', (Σv + 100·missing)/N'].
    assert c.lower == pytest.approx(140.0 / 3)
    assert c.upper == pytest.approx(240.0 / 3)
    assert c.reasons == ("backend failed", "frozen")
    assert cell_text(c) == "70.00 (2/4) [46.67, 80.00]"


def test_nothing_measured_is_missing_or_not_applicable(tmp_path: Path) -> None:
    write_model(
        tmp_path,
        "m",
        [
            {"global_memory": missing("no backend"), "local_memory": not_applicable("frozen")},
            {"global_memory": not_applicable("x"), "local_memory": not_applicable("frozen")},
        ],
    )
    table = table_of(tmp_path)
    assert cell(table, "m", "global_memory").status == "missing"
    assert cell_text(cell(table, "m", "global_memory")) == "missing"
    assert cell(table, "m", "local_memory").status == "not_applicable"
    # A metric absent from every scores.json is missing, named as such.
    absent = cell(table, "m", "revisit_memory")
    assert absent.status == "missing"
    assert absent.reasons == ("revisit_memory not in scores.json",)


def test_incomplete_episode_counts_as_missing(tmp_path: Path) -> None:
    write_episode(tmp_path, "m", "000", {"perceptual_quality": official(80.0)})
    write_episode(tmp_path, "m", "001", {"perceptual_quality": official(20.0)}, complete=False)
    c = cell(table_of(tmp_path), "m", "perceptual_quality")
    assert (c.status, c.value, c.reasons) == ("partial", 80.0, ("episode incomplete",))
    c2 = cell(table_of(tmp_path, include_incomplete=True), "m", "perceptual_quality")
    assert c2.status == "official"
    assert c2.value == pytest.approx(50.0)


def test_official_without_value_is_missing(tmp_path: Path) -> None:
    no_value = official(50.0)
    no_value["normalized"] = None
    write_model(tmp_path, "m", [{"perceptual_quality": no_value}])
    c = cell(table_of(tmp_path), "m", "perceptual_quality")
    assert c.status == "missing"


def test_nan_in_scores_json_refuses_the_file(tmp_path: Path) -> None:
    # NaN is not JSON (our writer never emits it): the file is refused, one line naming it,
    # never tabulated as if fine (issue 10)
    nan_metric = official(50.0)
    nan_metric["normalized"] = float("nan")
    write_model(tmp_path, "m", [{"perceptual_quality": nan_metric}])
    table = table_of(tmp_path)
    assert not table.rows and len(table.errors) == 1
    assert "NaN" in str(table.errors[0]) and "scores.json" in str(table.errors[0])


# --------------------------------------------------------------------------------------------
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


def test_revisit_memory_pools_pairs(tmp_path: Path) -> None:
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
    assert c.value == pytest.approx(100.0 / (1.0 + np.mean(np.concatenate(pairs))))
    assert (c.method, c.n_units) == ("pooled_pairs", 6)


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


# --------------------------------------------------------------------------------------------
# Exclusion
# --------------------------------------------------------------------------------------------


def _accuracy_episode(value: float) -> Metrics:
    return {
        "direction_accuracy_trans": control([value / 100.0], signed=True),
        "direction_accuracy_rot": not_applicable("no yaw segments"),
        "perceptual_quality": official(50.0),
    }


def test_default_rule_excludes_few_episodes_and_uniform_failure(tmp_path: Path) -> None:
    write_model(tmp_path, "good", [_accuracy_episode(60.0) for _ in range(10)])
    write_model(tmp_path, "genie", [_accuracy_episode(90.0) for _ in range(5)])
    write_model(tmp_path, "oasis", [_accuracy_episode(0.0) for _ in range(12)])
    table = tabulate([tmp_path])
    assert [r.model for r in table.rows] == ["good"]
    reasons = {e.model: e.reasons for e in table.excluded}
    assert reasons["genie"] == ("only 5 episodes (fewer than 10)",)
    assert len(reasons["oasis"]) == 1 and reasons["oasis"][0].startswith("fails uniformly")


def test_min_episodes_is_configurable_and_include_all_turns_the_rule_off(tmp_path: Path) -> None:
    write_model(tmp_path, "genie", [_accuracy_episode(90.0) for _ in range(5)])
    write_model(tmp_path, "oasis", [_accuracy_episode(0.5) for _ in range(3)])
    assert [r.model for r in tabulate([tmp_path], rule=ExclusionRule(min_episodes=5)).rows] == [
        "genie"
    ]
    everyone = tabulate([tmp_path], rule=INCLUDE_ALL)
    assert [r.model for r in everyone.rows] == ["genie", "oasis"]
    assert everyone.excluded == ()


def test_exclude_flag_applies_even_with_include_all(tmp_path: Path) -> None:
    write_model(tmp_path, "a", [_accuracy_episode(50.0)])
    write_model(tmp_path, "b", [_accuracy_episode(70.0)])
    table = tabulate([tmp_path], rule=INCLUDE_ALL, exclude={"b", "typo"})
    assert [r.model for r in table.rows] == ["a"]
    assert [(e.model, e.reasons) for e in table.excluded] == [("b", ("excluded on request",))]
    assert any("typo" in note for note in table.notes)


def test_model_without_accuracy_is_not_failing(tmp_path: Path) -> None:
    write_model(tmp_path, "q", [{"perceptual_quality": official(50.0)}] * 10)
    assert [r.model for r in tabulate([tmp_path]).rows] == ["q"]


# --------------------------------------------------------------------------------------------
# Reading files
# --------------------------------------------------------------------------------------------


def test_malformed_scores_json_is_reported_and_the_rest_tabulated(tmp_path: Path) -> None:
    write_model(tmp_path, "a", [{"perceptual_quality": official(50.0)}])
    bad = tmp_path / "b" / "000" / "scores.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")
    bad_status = write_episode(tmp_path, "c", "000", {"perceptual_quality": official(1.0)})
    doc = json.loads(bad_status.read_text())
    doc["metrics"]["perceptual_quality"]["status"] = "great"
    bad_status.write_text(json.dumps(doc))
    table = table_of(tmp_path)
    assert [r.model for r in table.rows] == ["a"]
    messages = [str(e) for e in table.errors]
    assert len(messages) == 2
    assert messages[0].startswith(str(bad)) and "not valid JSON" in messages[0]
    assert messages[1].startswith(str(bad_status)) and "status" in messages[1]


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (lambda d: d.update(format="other/1"), "format"),
        (lambda d: d.pop("model"), "model"),
        (lambda d: d.update(metrics=[]), "metrics"),
        (lambda d: d.update(complete="yes"), "complete"),
        (lambda d: d["metrics"]["x"].update(normalized="high"), "metrics.x.normalized"),
        (lambda d: d["metrics"]["x"].update(details=[1]), "metrics.x.details"),
    ],
)
def test_load_episode_names_the_problem(tmp_path: Path, mutate: Any, problem: str) -> None:
    path = write_episode(tmp_path, "m", "000", {"x": official(1.0)})
    doc = json.loads(path.read_text())
    mutate(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(BadInputError) as info:
        load_episode(path)
    assert info.value.source == str(path)
    assert problem in info.value.problem


def test_find_scores_files(tmp_path: Path) -> None:
    p1 = write_episode(tmp_path, "m", "001", {})
    p0 = write_episode(tmp_path, "m", "000", {})
    assert find_scores_files(tmp_path) == [p0, p1]
    assert find_scores_files(p1.parent) == [p1]
    assert find_scores_files(p1) == [p1]
    with pytest.raises(BadInputError, match="no such results directory"):
        find_scores_files(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInputError, match=r"no scores\.json"):
        find_scores_files(tmp_path / "empty")


def test_overlapping_paths_and_duplicate_episodes(tmp_path: Path) -> None:
    write_episode(tmp_path / "run1", "m", "000", {"perceptual_quality": official(10.0)})
    dup = write_episode(tmp_path / "run2", "m", "000", {"perceptual_quality": official(90.0)})
    loaded = load_results([tmp_path / "run1", tmp_path / "run1" / "m", tmp_path / "run2"])
    assert len(loaded.episodes) == 1
    assert loaded.episodes[0].metrics["perceptual_quality"].normalized == 10.0
    assert len(loaded.errors) == 1 and loaded.errors[0].source == str(dup)
    assert "duplicate episode" in loaded.errors[0].problem


# --------------------------------------------------------------------------------------------
# Sorting and drill-down
# --------------------------------------------------------------------------------------------


def test_sort_by_column_none_last(tmp_path: Path) -> None:
    for model, v in {"a": 10.0, "b": 90.0, "c": None, "d": 50.0, "e": 90.004}.items():
        metric = official(v) if v is not None else not_applicable("no qa")
        write_model(tmp_path, model, [{"perceptual_quality": metric}])
    table = table_of(tmp_path, sort_by="perceptual_quality")
    assert [r.model for r in table.rows] == ["b", "e", "d", "a", "c"]  # tie by name
    ascending = sort_rows(table.rows, "perceptual_quality", descending=False)
    assert [r.model for r in ascending] == ["a", "d", "b", "e", "c"]
    assert [r.model for r in sort_rows(table.rows, "model")] == ["a", "b", "c", "d", "e"]
    with pytest.raises(KeyError, match="unknown column"):
        build_table([], sort_by="nope")


def test_drill_down_model_episodes_and_segments(tmp_path: Path) -> None:
    write_model(
        tmp_path,
        "m",
        [
            {"direction_purity_trans": control([0.2, 0.4], extra=1)},
            {"direction_purity_trans": not_applicable("no fwd/lat segments")},
        ],
    )
    table = table_of(tmp_path)
    episodes = model_episodes(table, "m")
    assert [e.record.episode for e in episodes] == ["000", "001"]
    first = episodes[0].cells["direction_purity_trans"]
    assert first.status == "official"
    assert first.value == pytest.approx(30.0)
    second = episodes[1].cells["direction_purity_trans"]
    assert (second.status, second.reasons) == ("not_applicable", ("no fwd/lat segments",))
    segments = episode_segments(episodes[0].record)
    assert [(s.index, s.status, s.value) for s in segments] == [
        (0, "scored", 0.2),
        (1, "scored", 0.4),
        (100, "not_applicable", None),
        (200, "dropped", 5.0),
    ]
    assert all(s.column == "direction_purity_trans" for s in segments)
    assert episode_segments(episodes[0].record, "local_memory") == []
    with pytest.raises(KeyError):
        model_episodes(table, "nobody")


def test_to_json_round_trips(tmp_path: Path) -> None:
    write_model(tmp_path, "m", [{"perceptual_quality": official(50.0)}])
    doc = json.loads(json.dumps(table_of(tmp_path).to_json()))
    assert doc["rows"][0]["cells"]["perceptual_quality"]["value"] == 50.0
    assert [c["name"] for c in doc["columns"]] == list(COLUMN_NAMES)


def test_local_memory_skips_none_mutation_rate(tmp_path: Path) -> None:
    # A hard cut that left no countable pair: official 0, mutation_rate None (memory_local.py).
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


def test_memory_columns_agree_with_the_metric_modules(tmp_path: Path) -> None:
    """The table and the memory metric modules must give a model the same number."""
    local = pytest.importorskip("streameval.metrics.memory_local")
    revisit = pytest.importorskip("streameval.metrics.memory_revisit")
    glob = pytest.importorskip("streameval.metrics.memory_global")
    rng = np.random.default_rng(3)
    local_details: list[dict[str, Any]] = [
        {"hard_cut": bool(rng.random() < 0.3), "mutation_rate": float(rng.uniform(0, 0.5))}
        for _ in range(6)
    ]
    local_details.append({"hard_cut": True, "mutation_rate": None})
    revisit_details = [
        {"pair_distances": rng.uniform(0, 0.8, size=int(rng.integers(1, 12))).tolist()}
        for _ in range(7)
    ]
    global_details = [{"e": float(rng.uniform(0.0, 0.3))} for _ in range(7)]
    write_model(
        tmp_path,
        "m",
        [
            {
                "local_memory": official(50.0, ld),
                "revisit_memory": official(50.0, rd),
                "global_memory": official(50.0, gd),
            }
            for ld, rd, gd in zip(local_details, revisit_details, global_details, strict=True)
        ],
    )
    table = table_of(tmp_path)
    assert cell(table, "m", "local_memory").value == pytest.approx(
        local.local_memory_model(local_details), abs=1e-9
    )
    assert cell(table, "m", "revisit_memory").value == pytest.approx(
        revisit.revisit_memory_model(revisit_details), abs=1e-9
    )
    assert cell(table, "m", "global_memory").value == pytest.approx(
        glob.global_memory_model(global_details), abs=1e-9
    )

"""The master table: columns, ranks and colour, statuses, coverage and bounds, exclusion,
sorting and drill-down."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streameval.leaderboard import (
    INCLUDE_ALL,
    ExclusionRule,
    MasterTable,
    build_table,
    cell_text,
    episode_segments,
    format_value,
    model_episodes,
    rank_values,
    sort_rows,
    table_columns,
    tabulate,
)
from tests.leaderboard.helpers import (
    Metrics,
    cell,
    control,
    missing,
    not_applicable,
    official,
    table_of,
    write_episode,
    write_model,
)

# Columns
# --------------------------------------------------------------------------------------------


def test_columns_follow_design_order() -> None:
    columns = table_columns()
    assert tuple(c.name for c in columns) == (
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
    assert all(c.label and c.short for c in columns)


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
    # not applicable is not missing: measured in every episode where it applies, no "(2/3)"
    assert (pq.applicable, pq.coverage) == (2, 1.0)
    assert cell_text(pq) == "70.00"
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
    assert (c.applicable, c.coverage) == (3, pytest.approx(2 / 3))  # the n/a one is left out
    assert cell_text(c) == "70.00 (2/3) [46.67, 80.00]"


def test_pooled_control_coverage_counts_the_episodes_where_the_family_applies(
    tmp_path: Path,
) -> None:
    """The demo's three episodes: the third has no translation segment, so the trans columns
    are measured in every episode where they apply — official, no "(2/3)" — and the rot
    column, missing in one of the two episodes with a turn, is "(1/2)" with bounds over 2."""
    trans = control([1.0, 0.5], signed=True)
    rot = control([0.6], signed=True)
    write_model(
        tmp_path,
        "m",
        [
            {"direction_accuracy_trans": trans, "direction_accuracy_rot": rot},
            {
                "direction_accuracy_trans": trans,
                "direction_accuracy_rot": missing("perception failed"),
            },
            {
                "direction_accuracy_trans": not_applicable("no fwd/lat segments"),
                "direction_accuracy_rot": not_applicable("no yaw segments"),
            },
        ],
    )
    table = table_of(tmp_path)
    t = cell(table, "m", "direction_accuracy_trans")
    assert (t.status, t.measured, t.applicable, t.total) == ("official", 2, 2, 3)
    assert cell_text(t) == "75.00"
    r = cell(table, "m", "direction_accuracy_rot")
    assert (r.status, r.measured, r.applicable, r.n_missing) == ("partial", 1, 2, 1)
    # one missing episode assumed to carry one segment at -1 / +1: mean (0.6 ∓ 1) / 2
    assert r.lower == pytest.approx(0.0) and r.upper == pytest.approx(80.0)
    assert cell_text(r) == "60.00 (1/2) [0.00, 80.00]"
    assert r.to_json()["applicable"] == 2


def test_title_counts_the_models_it_shows_and_the_excluded(tmp_path: Path) -> None:
    """Issue: the dashboard said "0 models, 0 episodes" above the demo's one (excluded) row."""
    write_model(tmp_path, "demo[clean]", [{"perceptual_quality": official(50.0)}] * 3)
    default = tabulate([tmp_path])  # 3 episodes < 10: excluded by the default rule
    assert default.rows == () and len(default.excluded) == 1
    assert default.summary() == "1 model, 3 episodes (1 excluded)"
    assert tabulate([tmp_path], rule=INCLUDE_ALL).summary() == "1 model, 3 episodes"
    write_model(tmp_path, "other", [{"perceptual_quality": official(60.0)}])
    assert table_of(tmp_path, exclude={"other"}).summary() == "2 models, 4 episodes (1 excluded)"


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
    # never tabulated as if fine (docs/cli.md#bad-input)
    nan_metric = official(50.0)
    nan_metric["normalized"] = float("nan")
    write_model(tmp_path, "m", [{"perceptual_quality": nan_metric}])
    table = table_of(tmp_path)
    assert not table.rows and len(table.errors) == 1
    assert "NaN" in str(table.errors[0]) and "scores.json" in str(table.errors[0])


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
    assert [c["name"] for c in doc["columns"]] == [c.name for c in table_columns()]

"""Reading scores.json for the table: bad files reported, the rest tabulated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streameval.errors import BadInputError
from streameval.leaderboard import (
    load_episode,
    load_results,
)
from streameval.results.scores_file import find_scores_files
from tests.leaderboard.helpers import (
    official,
    table_of,
    write_episode,
    write_model,
)

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

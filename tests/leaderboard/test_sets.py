"""The master table per benchmark set and over all sets, for results that carry case records
(``leaderboard/sets.py``, ``streameval table``); results without them are shown as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streameval.cli.main import main
from streameval.leaderboard import INCLUDE_ALL, load_results
from streameval.leaderboard.sets import set_tables
from tests.leaderboard.helpers import control, write_episode


def _case_results(root: Path) -> None:
    """Two models, two sets of two cases each; the same case names in both sets."""
    values = {("A", "first_view/real"): 0.9, ("A", "third_view/style"): 0.5,
              ("B", "first_view/real"): 0.7, ("B", "third_view/style"): 0.3}  # fmt: skip
    for (model, set_name), value in values.items():
        for name in ("000_001", "001_001"):
            path = write_episode(
                root / set_name, model, name, {"direction_accuracy_trans": control([value])}
            )
            doc = json.loads(path.read_text())
            doc["case"] = {"name": name, "set": set_name, "image": name[:3], "action": 1,
                           "keys": "W", "image_sha256": None, "prompt_sha256": None}  # fmt: skip
            doc["conditioning"] = {"sent": True, "first_frame_similarity": 0.95, "honoured": True}
            path.write_text(json.dumps(doc))


def test_a_table_per_set_and_over_all_sets(tmp_path: Path) -> None:
    _case_results(tmp_path)
    loaded = load_results([tmp_path])
    assert not loaded.errors and len(loaded.episodes) == 8  # a case name in two sets: two cases
    tables = set_tables(loaded.episodes, rule=INCLUDE_ALL)
    assert list(tables) == ["first_view/real", "third_view/style"]
    value = {
        (name, row.model): row.cells["direction_accuracy_trans"].value
        for name, table in tables.items()
        for row in table.rows
    }
    expected = {("first_view/real", "A"): 90.0, ("first_view/real", "B"): 70.0,
                ("third_view/style", "A"): 50.0, ("third_view/style", "B"): 30.0}  # fmt: skip
    assert value == pytest.approx(expected)


def test_the_table_command_shows_the_sets_then_all_of_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _case_results(tmp_path)
    assert main(["table", str(tmp_path), "--include-all", "--markdown"]) == 0
    text = capsys.readouterr().out
    first, style, whole = (
        text.index(f"### {s}") for s in ("first_view/real", "third_view/style", "all sets")
    )
    assert first < style < whole
    assert "| A | 4 | 70.00 |" in text[whole:] and "| A | 2 | 90.00 |" in text[first:style]
    assert main(["table", str(tmp_path), "--include-all", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["sets"]) == {"first_view/real", "third_view/style"}
    assert [r["episodes"] for r in doc["rows"]] == [4, 4]
    assert main(["table", str(tmp_path), "--include-all", "--csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("set,model,") and [r.split(",")[0] for r in rows[1:]] == [
        "first_view/real", "first_view/real", "third_view/style", "third_view/style",
        "all sets", "all sets"]  # fmt: skip
    page = tmp_path / "table.html"
    assert main(["table", str(tmp_path), "--include-all", "--html", str(page)]) == 0
    html = page.read_text()
    first, style, whole = (
        html.index(f"<h2>{s}</h2>") for s in ("first_view/real", "third_view/style", "all sets")
    )
    assert first < style < whole
    assert "90.00" in html[first:style] and "30.00" in html[style:whole]
    assert "90.00" not in html[whole:] and "70.00" in html[whole:]


def test_results_without_cases_have_no_sets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_episode(tmp_path, "A", "009_WR", {"direction_accuracy_trans": control([0.9])})
    assert set_tables(load_results([tmp_path]).episodes) == {}
    assert main(["table", str(tmp_path), "--include-all", "--markdown"]) == 0
    assert "###" not in capsys.readouterr().out
    assert main(["table", str(tmp_path), "--include-all", "--csv"]) == 0
    assert capsys.readouterr().out.startswith("model,")

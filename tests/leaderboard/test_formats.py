"""``table`` says why it is empty and how to see everything, never drops columns at 80
columns, flags mixed backends and writes JSON, CSV and HTML (docs/cli.md#table)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from streameval.cli.main import main
from streameval.leaderboard import INCLUDE_ALL, table_columns, tabulate
from streameval.leaderboard.formats.terminal import render_rich
from tests.tui.sample import LEADERBOARD_MODELS, SAMPLE_EPISODES, write_sample_results

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    return write_sample_results(tmp_path / "results")


def test_an_emptied_table_says_why_and_how_to_see_everything(
    sample: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(SAMPLE_EPISODES) < 10  # the default rule excludes every sample model
    assert main(["table", str(sample)]) == 0
    captured = capsys.readouterr()
    assert "no model in the table" in captured.err and "--include-all" in captured.err
    assert "Excluded:" in captured.out
    assert main(["table", str(sample), "--include-all"]) == 0
    captured = capsys.readouterr()
    assert "no model in the table" not in captured.err
    for model in LEADERBOARD_MODELS:
        assert model in captured.out


@pytest.mark.parametrize("width", [80, 100])
def test_narrow_terminal_stacks_tables_and_keeps_every_column(sample: Path, width: int) -> None:
    table = tabulate([sample], rule=INCLUDE_ALL)
    buffer = io.StringIO()
    render_rich(table, buffer, width=width)
    text = ANSI.sub("", buffer.getvalue())
    assert max(len(line) for line in text.splitlines()) <= width
    headers = "\n".join(line for line in text.splitlines() if line.startswith("┃"))
    for column in table_columns():
        assert column.short in headers, column.short
    for model in LEADERBOARD_MODELS:
        assert model in text


def test_table_at_80_columns_from_the_command_line(
    sample: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["table", str(sample), "--include-all"]) == 0
    out = ANSI.sub("", capsys.readouterr().out)
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "(1/" in out and "(2/" in out  # stacked, not cut
    assert "Aesth" in out and "Local" in out


def test_json_and_csv_carry_every_model_with_statuses(
    sample: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["table", str(sample), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"] == [] and {e["model"] for e in doc["excluded"]} == set(LEADERBOARD_MODELS)
    assert main(["table", str(sample), "--csv", "--include-all"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["model"] for r in rows} == set(LEADERBOARD_MODELS)
    for row in rows:
        assert row["included"] == "True"
        assert row["direction_accuracy_trans_status"] == "official"
        assert 0 <= float(row["direction_accuracy_trans"]) <= 100
        assert row["direction_accuracy_trans_coverage"] == f"{len(SAMPLE_EPISODES)}/3"
    table = tabulate([sample], rule=INCLUDE_ALL)
    first = table.rows[0]
    match = next(r for r in rows if r["model"] == first.model)
    value = first.cells["direction_accuracy_trans"].value
    assert value is not None
    assert float(match["direction_accuracy_trans"]) == pytest.approx(value, abs=1e-6)


def test_html_file_is_a_self_contained_page(
    sample: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "table.html"
    assert main(["table", str(sample), "--include-all", "--html", str(page)]) == 0
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "data:image/png;base64," in html
    assert "http://" not in html and "https://" not in html
    for model in LEADERBOARD_MODELS:
        assert model in html
    assert main(["table", str(sample), "--html", str(tmp_path / "nope" / "t.html")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_mixed_backends_are_flagged(sample: Path, capsys: pytest.CaptureFixture[str]) -> None:
    models = sorted(LEADERBOARD_MODELS)
    for path in (sample / models[0]).rglob("scores.json"):
        doc = json.loads(path.read_text())
        doc.setdefault("provenance", {})["backends"] = {"flow": "raft"}
        path.write_text(json.dumps(doc))
    for path in (sample / models[1]).rglob("scores.json"):
        doc = json.loads(path.read_text())
        doc.setdefault("provenance", {})["backends"] = {"flow": "dis-fast"}
        path.write_text(json.dumps(doc))
    assert main(["table", str(sample), "--include-all", "--csv"]) == 0
    err = capsys.readouterr().err
    assert "different flow backends" in err and "raft" in err and "dis-fast" in err

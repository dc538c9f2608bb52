"""``table --diagnostics``: the registered non-column metrics, per model, in their own units."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from streameval.cli import table as table_command
from streameval.leaderboard import INCLUDE_ALL, build_table
from streameval.leaderboard.diagnostics import diagnostics
from streameval.metrics.registry import metric_names
from streameval.results.scores_file import load_results
from tests.cli.test_table_cli import official, parse, write_episode


def statistic(raw: float, unit: str) -> dict[str, Any]:
    return {
        "raw": raw,
        "normalized": None,
        "status": "official",
        "reason": None,
        "details": {"unit": unit},
    }


def missing(reason: str) -> dict[str, Any]:
    return {"raw": None, "normalized": None, "status": "missing", "reason": reason}


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """alpha: sharpness 0.2 and 0.4 (mean 0.3), noise in one episode only; beta: a missing
    sharpness and an incomplete episode whose value must not count."""
    write_episode(
        tmp_path,
        "alpha",
        "000",
        {
            "perceptual_quality": official(50.0),
            "imaging_sharpness": statistic(0.2, "1/px"),
            "imaging_noise": statistic(1.5, "grey levels"),
        },
    )
    write_episode(
        tmp_path,
        "alpha",
        "001",
        {"perceptual_quality": official(60.0), "imaging_sharpness": statistic(0.4, "1/px")},
    )
    write_episode(
        tmp_path,
        "beta[hiccup]",
        "000",
        {"perceptual_quality": official(40.0), "imaging_sharpness": missing("no frame measured")},
    )
    late = write_episode(
        tmp_path,
        "beta[hiccup]",
        "001",
        {"perceptual_quality": official(40.0), "imaging_sharpness": statistic(9.0, "1/px")},
    )
    doc = json.loads(late.read_text())
    doc["complete"] = False
    late.write_text(json.dumps(doc))
    return tmp_path


def _table(results: Path) -> Any:
    return build_table(load_results([results]).episodes, rule=INCLUDE_ALL)


def test_mean_and_coverage_over_the_counted_episodes(results: Path) -> None:
    diag = diagnostics(_table(results))
    # only metrics some episode reported, in registration order
    assert [s.name for s in diag.metrics] == ["imaging_sharpness", "imaging_noise"]
    assert all(n in metric_names(column=False) for n in ("imaging_sharpness", "imaging_noise"))
    rows = dict(diag.rows)
    sharp = rows["alpha"]["imaging_sharpness"]
    assert sharp.mean == pytest.approx(0.3) and (sharp.measured, sharp.total) == (2, 2)
    assert sharp.unit == "1/px" and sharp.text() == "0.3 1/px"
    noise = rows["alpha"]["imaging_noise"]
    assert noise.mean == 1.5 and noise.text() == "1.5 grey levels (1/2)"
    # beta: one missing, one incomplete (not counted by default): no value, with the reason
    beta = rows["beta[hiccup]"]["imaging_sharpness"]
    assert beta.mean is None and beta.measured == 0 and beta.reason == "no frame measured"
    assert beta.text() == "n/a"


def test_incomplete_episodes_count_when_asked(results: Path) -> None:
    table = build_table(load_results([results]).episodes, rule=INCLUDE_ALL, include_incomplete=True)
    beta = dict(diagnostics(table).rows)["beta[hiccup]"]["imaging_sharpness"]
    assert beta.mean == 9.0 and (beta.measured, beta.total) == (1, 2)


def test_cli_formats_carry_the_diagnostics(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert table_command.run(parse([str(results), "--include-all", "--diagnostics", "--json"])) == 0
    doc = json.loads(capsys.readouterr().out)
    cells = {r["model"]: r["cells"] for r in doc["diagnostics"]["rows"]}
    assert cells["alpha"]["imaging_sharpness"]["mean"] == pytest.approx(0.3)
    assert cells["alpha"]["imaging_sharpness"]["unit"] == "1/px"

    assert table_command.run(parse([str(results), "--include-all", "--diagnostics", "--csv"])) == 0
    rows = {r["model"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    assert rows["alpha"]["imaging_sharpness_mean"] == "0.3"
    assert rows["alpha"]["imaging_noise_measured"] == "1/2"
    assert rows["beta[hiccup]"]["imaging_sharpness_mean"] == ""

    assert (
        table_command.run(parse([str(results), "--include-all", "--diagnostics", "--markdown"]))
        == 0
    )
    out = capsys.readouterr().out
    assert "| Model | Imaging sharpness | Imaging noise |" in out
    assert "| alpha | 0.3 1/px | 1.5 grey levels (1/2) |" in out

    assert table_command.run(parse([str(results), "--include-all", "--diagnostics"])) == 0
    out = capsys.readouterr().out
    assert "diagnostics (own units)" in out and "Imaging sharpness" in out and "0.3 1/px" in out
    assert "alpha" in out and "beta[hiccup]" in out


def test_without_the_flag_nothing_changes(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert table_command.run(parse([str(results), "--include-all", "--json"])) == 0
    assert "diagnostics" not in json.loads(capsys.readouterr().out)
    assert table_command.run(parse([str(results), "--include-all", "--markdown"])) == 0
    assert "Imaging sharpness" not in capsys.readouterr().out


def test_interactivity_figures_come_from_their_own_block(tmp_path: Path) -> None:
    """Registered without a kernel, they live in scores.json's ``interactivity`` block."""
    for i, fps in enumerate((15.0, 13.0)):
        path = write_episode(tmp_path, "net", f"{i:03d}", {"perceptual_quality": official(50.0)})
        doc = json.loads(path.read_text())
        doc["interactivity"] = {"delivered_fps": fps, "clock": "wall", "stalls": 1 + i}
        path.write_text(json.dumps(doc))
    write_episode(tmp_path, "local", "000", {"perceptual_quality": official(50.0)})
    diag = diagnostics(_table(tmp_path))
    names = [s.name for s in diag.metrics]
    assert "delivered_fps" in names and "stalls" in names and "clock" not in names
    rows = dict(diag.rows)
    assert rows["net"]["delivered_fps"].mean == 14.0 and rows["net"]["delivered_fps"].unit == "fps"
    assert rows["net"]["stalls"].mean == 1.5
    local = rows["local"]["delivered_fps"]
    assert local.mean is None and local.reason == "no episode measured delivered_fps"

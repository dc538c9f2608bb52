"""``streameval table``: Markdown and terminal output, exit statuses (docs/cli.md#table)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

from streameval.cli import table as table_command


def write_episode(root: Path, model: str, episode: str, metrics: dict[str, Any]) -> Path:
    path = root / model / episode / "scores.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "format": "streameval.scores/1",
        "model": model,
        "suite": "worldmark",
        "episode": episode,
        "fps": 16,
        "frames": 320,
        "complete": True,
        "metrics": metrics,
    }
    path.write_text(json.dumps(doc))
    return path


def official(v: float) -> dict[str, Any]:
    return {"raw": v / 100, "normalized": v, "status": "official", "reason": None, "details": {}}


def not_applicable(reason: str) -> dict[str, Any]:
    return {"raw": None, "normalized": None, "status": "not_applicable", "reason": reason}


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="streameval")
    table_command.add_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["table", *argv])


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """Three models of two episodes, one with an n/a and one with a missing episode."""
    for model, values in {
        "alpha": (90.0, 80.0),
        "beta": (70.0, 60.0),
        "gamma": (10.0, 20.0),
    }.items():
        for i, v in enumerate(values):
            write_episode(
                tmp_path,
                model,
                f"{i:03d}",
                {
                    "perceptual_quality": official(v),
                    "aesthetic_quality": not_applicable("no Q-Align backend"),
                    "direction_accuracy_trans": official(v / 2),
                },
            )
    write_episode(tmp_path, "delta", "000", {"perceptual_quality": official(99.0)})
    write_episode(tmp_path, "delta", "001", {})
    return tmp_path


def test_markdown_table(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = table_command.run(parse([str(results), "--markdown", "--min-episodes", "2"]))
    out, err = capsys.readouterr()
    assert code == 0
    assert err == ""
    lines = out.splitlines()
    assert lines[0].startswith("| Model | Episodes | Direction Accuracy (trans) |")
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines if line.startswith("| ")}
    assert "🟢 85.00" in rows["alpha"]
    assert "🟡 65.00" in rows["beta"]
    assert "🔴 15.00" in rows["gamma"]
    assert "n/a" in rows["alpha"]
    # delta: one episode without scores → partial, coverage and bounds, no colour.
    assert "99.00 (1/2) [49.50, 99.50]" in rows["delta"]
    assert "🟢 99.00" not in rows["delta"]
    assert any(line.startswith("per column: 🟢 best") for line in lines)


def test_sort_and_exclusions_are_listed(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(results), "--markdown", "--sort", "perceptual_quality", "--exclude", "beta"]
    code = table_command.run(parse(argv))
    out = capsys.readouterr().out
    assert code == 0
    # Default min-episodes (10) leaves every model out: each is listed with its reason.
    assert "| (no model) |" in out
    assert "- beta (2 episodes): excluded on request; only 2 episodes (fewer than 10)" in out
    code = table_command.run(parse([*argv, "--include-all"]))
    out = capsys.readouterr().out
    models = [line.split(" | ")[0].lstrip("| ") for line in out.splitlines()[2:6]]
    assert models == ["delta", "alpha", "gamma", ""]
    assert "- beta (2 episodes): excluded on request" in out


def test_bad_file_exits_2_and_the_rest_is_tabulated(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = results / "broken" / "000" / "scores.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("[1, 2")
    code = table_command.run(parse([str(results), "--markdown", "--include-all"]))
    out, err = capsys.readouterr()
    assert code == 2
    assert err.splitlines() == [f"error: {bad}: not valid JSON (Expecting ',' delimiter at line 1)"]
    assert "| alpha |" in out and "broken" not in out


def test_missing_directory_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = table_command.run(parse([str(tmp_path / "nope"), "--markdown"]))
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == f"error: {tmp_path / 'nope'}: no such results directory"


def test_terminal_table(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = table_command.run(parse([str(results), "--include-all", "--exclude", "gamma"]))
    out = capsys.readouterr().out
    assert code == 0
    for text in ("streameval master table", "alpha", "beta", "delta", "85.00", "n/a", "(1/2)"):
        assert text in out
    assert "Excluded:" in out and "gamma" in out
    assert re.search(
        r"streameval master table( \(\d/\d\))? · 4 models, 8 episodes \(1 excluded\)", out
    )


def test_terminal_title_counts_the_demo_model_the_rule_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``make demo`` then ``streameval table``: one model, three episodes, excluded by the
    default rule (fewer than 10) — the title says so instead of "0 models, 0 episodes"."""
    for i in range(3):
        write_episode(tmp_path, "procedural-world[clean]", f"{i:03d}", {"x": official(1.0)})
    assert table_command.run(parse([str(tmp_path)])) == 0
    out = capsys.readouterr().out
    # (the terminal's width may stack the columns: "master table (1/2) · ...")
    assert re.search(r"master table( \(\d/\d\))? · 1 model, 3 episodes \(1 excluded\)", out)
    assert "procedural-world[clean] (3 episodes): only 3 episodes" in out
    assert table_command.run(parse([str(tmp_path), "--include-all"])) == 0
    out = capsys.readouterr().out
    assert re.search(r"master table( \(\d/\d\))? · 1 model, 3 episodes\s", out)
    assert "excluded)" not in out


def test_parser_rejects_unknown_sort_column(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parse(["x", "--sort", "speed"])
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        parse(["x", "--min-episodes", "-1"])

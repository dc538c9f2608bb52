"""Short keys end to end (docs/methods.md#shortest-keys): ``demo --seconds-per-key 3`` says so
before its first frame, and its response latency is not_applicable with the key length it
needs, never an official 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streameval.cli.main import main


def test_a_3_s_key_run_warns_first_and_scores_no_false_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["demo", "--no-tui", "--no-report", "--record", "off", "--out", str(tmp_path)]
    assert main([*argv, "--actions", "6", "--seconds-per-key", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()  # the progress lines, in order
    warning = next(i for i, line in enumerate(lines) if "keys too short" in line)
    assert "1 of 2 keys too short for the control columns" in lines[warning]
    assert "keys of at least 4.13 s at 16 fps" in lines[warning]
    assert not any(line.lstrip().startswith("frame ") for line in lines[:warning])
    doc = json.loads((tmp_path / "procedural-world-clean" / "006_WS" / "scores.json").read_text())
    latency = doc["metrics"]["response_latency_trans"]
    assert latency["status"] == "not_applicable" and latency["normalized"] is None
    assert "keys of at least 4.13 s" in latency["reason"]
    (switch,) = latency["details"]["segments"]
    assert switch["shortest_key_s"] == 4.125 and "response" not in switch
    # the first key's stable zone is long enough: accuracy is scored
    assert doc["metrics"]["direction_accuracy_trans"]["status"] == "official"

"""Every argument has help text; Ctrl-C is a user stop (130, docs/cli.md#exit-status), not
bad input, finalizes the episode in progress and says where the results are; a run refused
for bad input leaves no empty ``--out`` behind."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from streameval.cli.main import build_parser, main


def _actions(parser: argparse.ArgumentParser, name: str) -> list[tuple[str, argparse.Action]]:
    found: list[tuple[str, argparse.Action]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                found += _actions(sub, sub_name)
        elif not isinstance(action, argparse._HelpAction):
            found.append((name, action))
    return found


def test_every_argument_has_help_text() -> None:
    actions = _actions(build_parser(), "streameval")
    assert len(actions) > 40
    undocumented = [(n, a.option_strings or a.dest) for n, a in actions if not a.help]
    assert undocumented == []


def test_ctrl_c_exits_130_finalizes_the_episode_and_names_the_results(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "streameval", "demo", "--no-tui", "--out", str(out)]
    cmd += ["--actions", "9", "--cuts", "scenedetect-content", "--record", "off"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        deadline = time.monotonic() + 120
        log = out / "procedural-world-clean" / "009_WR"
        # wait until the episode is under way (its first plain progress line), then Ctrl-C
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if "frame " in line or not line:  # not line: it ended (the asserts say how)
                break
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err and str(out) in err
    doc = json.loads((log / "scores.json").read_text())
    assert doc["complete"] is False and doc["frames"] > 0


def test_verbose_logs_debug_through_logging(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from streameval.cli.main import main

    short = ["--no-tui", "--actions", "8", "--seconds-per-key", "1", "--record", "off"]
    short += ["--no-report"]
    short += ["--cuts", "scenedetect-content"]
    assert main(["demo", "-v", "--out", str(tmp_path), *short]) == 0
    err = capsys.readouterr().err
    assert "DEBUG streameval.runs.jobs: job 008_AD: complete" in err
    assert main(["demo", "-q", "--out", str(tmp_path / "q"), *short]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "DEBUG" not in captured.err and "1 complete" in captured.err


@pytest.mark.parametrize(
    "argv",
    [
        ["attach", "ws://127.0.0.1:9/x", "--cases", "{tmp}/no-such-cases", "--no-tui"],
        ["replay", "{tmp}/no-such-rollout", "--no-tui"],
    ],
)
def test_a_run_refused_for_bad_input_leaves_no_empty_out(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The folders ``--out`` needed created are taken away again when nothing was written
    into them; a folder that was there before stays."""
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main([*args, "--out", str(tmp_path / "new" / "out")]) == 2
    assert "error:" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    assert main([*args, "--out", str(kept)]) == 2
    assert kept.is_dir()

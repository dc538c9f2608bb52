"""The command line end to end: ``streameval serve --mqtt`` in its own process, ``attach
mqtt://`` here, the recording replayed; a served model killed mid-episode."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from streameval.cli.main import main
from streameval.metrics.registry import metric_names
from streameval.report.data import load_episode_data
from streameval.report.episode import render_episode
from tests.transports.conftest import Broker

# the procedural world at 320×216 (tests/transports/worlds.py): nothing here is about the size
WORLD = "python:tests.transports.worlds:world"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def served(broker: Broker) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    url = broker.url("cli")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streameval", "serve", WORLD, "--mqtt", url],
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)},
    )
    assert proc.stderr is not None
    line = proc.stderr.readline().decode()  # "serving ... on URL" once connected
    assert "serving" in line, line
    time.sleep(0.3)
    try:
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _episode(out: Path, episode: str) -> Path:
    """OUT/<model>/<episode>/ (the model folder is named after the server)."""
    (found,) = out.glob(f"*/{episode}")
    return found


def _metrics(path: Path) -> dict[str, object]:
    doc = json.loads(path.read_text())
    return {k: v["normalized"] for k, v in doc["metrics"].items()}


def test_attach_mqtt_then_replay_the_recording_bit_identically(
    served: tuple[str, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    url, _ = served
    out = tmp_path / "live"
    args = ["attach", url, "--out", str(out), "--actions", "8", "--seconds-per-key", "1"]
    assert main([*args, "--no-tui", "--cuts", "scenedetect-adaptive"]) == 0
    scores = json.loads((_episode(out, "008_AD") / "scores.json").read_text())
    inter = scores["interactivity"]
    assert scores["frames"] == 32 and scores["complete"] is True
    assert inter["transport"] == "mqtt" and inter["clock"] == "video" and inter["smoke"] is True
    assert inter["alignment"] == "reported"
    assert inter["delivered_fps"] > 0 and inter["jitter_ms_p95"] is not None
    # every registered interactivity figure is written (the dashboard and report read them)
    # every figure but the chunked servers' own statistics (our protocol reports none)
    figures = {n for n in metric_names(family="interactivity") if not n.startswith("server_")}
    assert figures <= set(inter), figures - set(inter)
    report = render_episode(load_episode_data(_episode(out, "008_AD")))
    assert "Key-to-response latency (median)" in report and "Frames missing" in report
    replayed = tmp_path / "replayed"
    recording = _episode(out, "008_AD") / "recording"
    replay_args = ["replay", str(recording), "--out", str(replayed), "--no-tui"]
    assert main([*replay_args, "--cuts", "scenedetect-adaptive"]) == 0
    (replayed_scores,) = replayed.glob("*/*/scores.json")
    assert _metrics(replayed_scores) == _metrics(_episode(out, "008_AD") / "scores.json")


def test_server_killed_mid_episode(
    served: tuple[str, subprocess.Popen[bytes]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, proc = served
    killer = threading.Timer(2.0, lambda: proc.send_signal(signal.SIGKILL))
    killer.start()
    # 1920 frames of video clock: the 320×216 world steps flat out at ~230 frames/s here, so a
    # 20 s key (320 frames) could end before the kill at 2 s; this one cannot (~8 s)
    args = ["attach", url, "--out", str(tmp_path), "--actions", "3", "--seconds-per-key", "120"]
    started = time.perf_counter()
    status = main([*args, "--no-tui", "--cuts", "scenedetect-adaptive"])
    killer.cancel()
    assert status == 2
    assert time.perf_counter() - started < 9  # the broker's will, not the 10 s timeout
    err = capsys.readouterr().err
    assert "server left: server connection lost" in err
    scores = json.loads((_episode(tmp_path, "003_A") / "scores.json").read_text())
    assert scores["complete"] is False and scores["frames"] > 0
    actions = (_episode(tmp_path, "003_A") / "recording" / "actions.jsonl").read_text().splitlines()
    assert len(actions) == scores["frames"]

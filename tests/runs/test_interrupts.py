"""Interrupting a run (docs/cli.md#exit-status): SIGINT and SIGTERM finalize the episode in progress
as incomplete with scores.json written; SIGKILL at random moments during replay, rescore and attach
leaves only complete, parseable files (atomic writes).

Each run is a real ``python -m streameval`` process. Temporary files of the atomic writes
(``*.tmp``, ``*.tmp.npz``) may survive a SIGKILL; they are never read, and the next write of
the same file replaces them.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.replay.replay_synth import make_rollout_dir

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--no-tui", "--cuts", "scenedetect-content"]


def _start(args: list[str], mark: Path | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    if mark is not None:
        env["STREAMEVAL_TEST_MARK"] = str(mark)
    return subprocess.Popen(
        [sys.executable, "-m", "streameval", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def _attach_args(out: Path, model: str = "slow") -> list[str]:
    return ["attach", f"python:tests.inputs.models:{model}", "--out", str(out),
            "--actions", "8", "--seconds-per-key", "6", *FAST]  # fmt: skip


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_finalizes_the_episode_as_incomplete(tmp_path: Path, sig: signal.Signals) -> None:
    out, mark = tmp_path / "out", tmp_path / "mark"
    proc = _start(_attach_args(out), mark)
    _wait_for(mark, proc)  # 30 frames stepped: mid-episode
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode()
    assert proc.returncode == 130  # a stop someone asked for, not bad input
    doc = json.loads(next(out.glob("*/008_AD/scores.json")).read_text())
    # frames still queued for perception when the signal lands are dropped (cancel = stop
    # now), so on a loaded machine the count may be anything short of the whole episode
    assert doc["complete"] is False and doc["frames"] < 192
    line = json.loads((out / "results.jsonl").read_text().splitlines()[-1])
    assert line["status"] == "incomplete"


def test_sigterm_under_the_dashboard_finalizes_the_episode(tmp_path: Path) -> None:
    """With a terminal the dashboard runs (Textual owns the loop): SIGTERM stops the run as
    ``q`` does, and the episode in progress is written, incomplete."""
    import pty

    out, mark = tmp_path / "out", tmp_path / "mark"
    primary, secondary = pty.openpty()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), "TERM": "xterm-256color",
           "STREAMEVAL_TEST_MARK": str(mark), "COLUMNS": "120", "LINES": "40"}  # fmt: skip
    args = [a for a in _attach_args(out) if a != "--no-tui"]
    # Textual draws on stderr: it goes to the terminal too, drained below
    proc = subprocess.Popen(
        [sys.executable, "-m", "streameval", *args],
        cwd=ROOT, env=env, stdin=secondary, stdout=secondary, stderr=secondary,
    )  # fmt: skip
    os.close(secondary)
    screen = bytearray()

    def drain() -> None:  # keep the terminal read so the dashboard never blocks on it
        with contextlib.suppress(OSError):
            if select.select([primary], [], [], 0.05)[0]:
                screen.extend(os.read(primary, 65536))

    try:
        deadline = time.monotonic() + 180
        while not mark.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            drain()
        proc.send_signal(signal.SIGTERM)
        while proc.poll() is None and time.monotonic() < deadline + 60:
            drain()
        drain()
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(primary)
    tail = screen[-2000:].decode(errors="replace")
    assert b"Traceback" not in screen, tail
    assert proc.returncode == 130, tail
    doc = json.loads(next(out.glob("*/008_AD/scores.json")).read_text())
    assert doc["complete"] is False and doc["frames"] < 192


SIGNALLED_EXIT_S = 10.0
"""An interrupted run ends within this (measured 1.5–5 s; it was 10–40 s with TransNetV2
while its worker was still loading: the episode's finalize waited for the worker)."""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("cuts", ["scenedetect-content", "transnetv2"])
def test_signal_while_the_model_hangs(tmp_path: Path, sig: signal.Signals, cuts: str) -> None:
    """A model blocked in ``step`` (the model thread never returns): either signal ends the
    run within seconds and leaves the episode's incomplete record; with TransNetV2 the
    signal comes while its worker is still starting, and the run does not wait for it."""
    out, mark = tmp_path / "out", tmp_path / "mark"
    args = [a if a != "scenedetect-content" else cuts for a in _attach_args(out, "step_hangs")]
    proc = _start(args, mark)
    _wait_for(mark, proc)  # the model is entering its never-ending step()
    time.sleep(0.5)
    signalled = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - signalled
    assert b"Traceback" not in err, err.decode()
    assert proc.returncode == 130
    doc = json.loads(next(out.glob("*/008_AD/scores.json")).read_text())
    assert doc["complete"] is False and doc["frames"] <= 20
    assert took < SIGNALLED_EXIT_S, f"{took:.1f} s from the signal to the exit"
    local = doc["metrics"]["local_memory"]
    assert "cut detector failed" not in (local.get("reason") or ""), local


def _check_complete_files(root: Path) -> int:
    """Every file below ``root`` (temporaries aside) parses completely; returns the count."""
    checked = 0
    for path in root.rglob("*"):
        if not path.is_file() or ".tmp" in path.name:
            continue
        if path.suffix == ".json":
            json.loads(path.read_text())
        elif path.suffix == ".jsonl":
            text = path.read_text()
            assert text == "" or text.endswith("\n"), path
            for line in text.splitlines():
                json.loads(line)
        elif path.suffix == ".npz":
            with np.load(path) as z:
                for name in z.files:
                    z[name]
        elif path.suffix == ".npy":
            np.load(path)
        else:
            continue  # video.mp4 of a recording in progress: its own container, decoded lazily
        checked += 1
    return checked


def _command(command: str, rollout: Path, out: Path, done: Path) -> list[str]:
    if command == "replay":
        return ["replay", str(rollout), "--out", str(out), *FAST]
    if command == "rescore":
        shutil.copytree(done, out)
        return ["rescore", str(out)]
    return _attach_args(out, "good")


@pytest.mark.long  # `make test-long`: nine runs and kills of whole commands
@pytest.mark.parametrize("command", ["replay", "rescore", "attach"])
def test_sigkill_at_random_moments_leaves_complete_files(tmp_path: Path, command: str) -> None:
    rng = random.Random(f"sigkill-{command}")
    rollout = make_rollout_dir(tmp_path / "in" / "ep", ["A"] * 40 + ["D"] * 40, size=(64, 48))
    done = tmp_path / "done"
    proc = _start(["replay", str(rollout), "--out", str(done), *FAST])
    assert proc.wait(timeout=120) == 0
    # one whole run sets the time scale; the kills fall in each third of it (stratified)
    start = time.monotonic()
    proc = _start(_command(command, rollout, tmp_path / "full", done))
    assert proc.wait(timeout=120) == 0
    full = time.monotonic() - start
    checked = 0
    for attempt in range(3):
        out = tmp_path / f"out{attempt}"
        proc = _start(_command(command, rollout, out, done))
        time.sleep(rng.uniform(attempt / 3, (attempt + 1) / 3) * full)
        proc.kill()
        proc.wait(timeout=30)
        checked += _check_complete_files(out) if out.exists() else 0
    checked += _check_complete_files(tmp_path / "full")
    assert checked > 0


def test_ctrl_c_at_the_terminal_does_not_kill_the_cut_detector(tmp_path: Path) -> None:
    """A terminal's Ctrl-C goes to the whole foreground process group: the TransNetV2 worker
    sits in its own group, so the interrupted episode's Local Memory says what happened to
    the episode, not "cut detector failed: KeyboardInterrupt"."""
    out, mark = tmp_path / "out", tmp_path / "mark"
    args = [a if a != "scenedetect-content" else "transnetv2" for a in _attach_args(out)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT),
           "STREAMEVAL_TEST_MARK": str(mark)}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "streameval", *args],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,  # a group of its own, as a shell's foreground job has
    )  # fmt: skip
    _wait_for(mark, proc)
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    _, err = proc.communicate(timeout=120)
    assert b"Traceback" not in err, err.decode()
    assert proc.returncode == 130
    doc = json.loads(next(out.glob("*/008_AD/scores.json")).read_text())
    assert doc["complete"] is False
    local = doc["metrics"]["local_memory"]
    assert "KeyboardInterrupt" not in json.dumps(local), local
    assert "cut detector failed" not in (local.get("reason") or ""), local

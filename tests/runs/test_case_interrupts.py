"""A run of 7 cases interrupted after 3 (SIGINT, SIGTERM, SIGKILL) and resumed with
``--resume``: 7 cases scored, each once — the three finished before are skipped, the one in
progress is run again, none is lost. Each run is a real ``python -m streameval`` process,
started and signalled as in ``tests/runs/test_interrupts.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cases.arena_synth import write_arena
from tests.runs.case_models import MARKED_CASE
from tests.runs.test_interrupts import FAST, ROOT, _wait_for

FINISHED_BEFORE = MARKED_CASE - 1
# the synthetic arena's (tests/cases/arena_synth.py) cases of these actions: 4 first-person,
# 3 third-person; enough that finished, interrupted and not yet started cases all occur
ACTIONS = "1,2,3,5,6"
CASES = 7


def _run_args(arena: Path, out: Path, *extra: str) -> list[str]:
    model = "python:tests.runs.case_models:counted"
    return ["attach", model, "--cases", str(arena), "--actions", ACTIONS, "--out", str(out),
            "--seconds-per-key", "0.5", "--record", "lossless", *FAST, *extra]  # fmt: skip


def _start(args: list[str], mark: Path | None, resets: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT),
           "STREAMEVAL_TEST_RESETS": str(resets)}  # fmt: skip
    env.pop("STREAMEVAL_TEST_MARK", None)
    if mark is not None:
        env["STREAMEVAL_TEST_MARK"] = str(mark)
    return subprocess.Popen(
        [sys.executable, "-m", "streameval", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _complete(out: Path) -> list[Path]:
    found = []
    for path in out.rglob("scores.json"):
        if json.loads(path.read_text())["complete"]:
            found.append(path.parent)
    return found


# SIGTERM takes SIGINT's path (both finalize the case in progress, exit 130; a single
# episode under each is in tests/runs/test_interrupts.py): `make test` runs SIGINT and
# SIGKILL here, `make test-long` SIGTERM too
@pytest.mark.parametrize(
    "sig", [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.long), signal.SIGKILL]
)
def test_an_interrupted_case_run_resumes_with_each_case_once(
    tmp_path: Path, sig: signal.Signals
) -> None:
    arena = write_arena(tmp_path / "arena_inputs")
    out, mark, resets = tmp_path / "out", tmp_path / "mark", tmp_path / "resets.log"
    proc = _start(_run_args(arena, out), mark, resets)
    _wait_for(mark, proc)  # the marked case has started: the ones before are finished
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode()
    assert len(_complete(out)) == FINISHED_BEFORE
    if sig != signal.SIGKILL:  # the case in progress was finalized as incomplete
        assert proc.returncode == 130
        incomplete = [p for p in out.rglob("scores.json") if p.parent not in _complete(out)]
        assert len(incomplete) == 1
    started_before = len(resets.read_text().splitlines())
    assert started_before == FINISHED_BEFORE + 1

    proc = _start(_run_args(arena, out, "--resume"), None, resets)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err.decode()
    assert err.decode().count("finished before, skipped (--resume)") == FINISHED_BEFORE
    done = _complete(out)
    assert len(done) == len(set(done)) == CASES
    # the rest, and the interrupted case again: never a finished one twice
    assert len(resets.read_text().splitlines()) - started_before == CASES - FINISHED_BEFORE
    model_dir = out / "_Counted"
    manifest = [json.loads(line) for line in (model_dir / "manifest.jsonl").open()]
    assert len(manifest) == len({m["case"] for m in manifest}) == CASES
    assert all(m["status"] == "complete" for m in manifest)
    results = [json.loads(line) for line in (out / "results.jsonl").open()]
    assert len(results) == CASES and all(r["status"] == "complete" for r in results)
    order = json.loads((model_dir / "cases.json").read_text())["order"]
    assert sorted(order) == sorted(str(p.relative_to(model_dir)) for p in done)

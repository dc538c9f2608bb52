"""What the Python API gained by taking the command line's road (``runs.run.arun``): a stop
rule, live scores published over MQTT, the interrupted-run record of a cancelled or SIGTERMed
evaluation, and the same one-line refusals before anything runs. (Ray: in
``tests/scale/test_ray_batch.py``, beside the command line's batch.)"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import streameval
from streameval.engine.config import PipelineConfig
from streameval.errors import BadInputError
from streameval.runs.cases import CaseSelection
from tests.test_api import Slider
from tests.transports.conftest import Broker, broker  # noqa: F401 (the fixture, used here)

ROOT = Path(__file__).resolve().parents[1]
CONFIG = PipelineConfig(cuts="scenedetect-content")
SLOW = "python:tests.inputs.models:slow"  # 20 ms a frame; marks its 30th frame


def _wait_for(path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def _last_line(out: Path) -> dict[str, object]:
    line: dict[str, object] = json.loads((out / "results.jsonl").read_text().splitlines()[-1])
    return line


def test_a_stop_rule_and_live_scores_over_mqtt(tmp_path: Path, broker: Broker) -> None:  # noqa: F811
    """``stop_when`` and ``publish_mqtt``: the rule is met after the first case (its interval
    is exact), the second is recorded not run, and a watcher through a real broker sees the
    rule met as the evaluator's monitor says it."""
    from streameval.tui.remote import RemoteDashboardApp

    from tests.cases.arena_synth import write_arena
    from tests.tui.tui_fakes import wait_until

    arena = write_arena(tmp_path / "arena_inputs")
    url = broker.url("api-stop")
    out = tmp_path / "out"
    cases = CaseSelection(arena, sets="first_view/real", images="0-1", actions="1,2")
    met = "--stop-when 'width<=100': met after 1 case"

    def evaluate() -> streameval.Evaluation:
        return streameval.evaluate(
            "python:tests.runs.case_models:picture_world",
            out=out,
            model_name="world",
            cases=cases,
            seconds_per_key=0.5,
            config=CONFIG,
            record="off",
            reports=False,
            stop_when="width<=100",
            publish_mqtt=url,
        )

    async def run() -> tuple[streameval.Evaluation, RemoteDashboardApp]:
        remote = RemoteDashboardApp(url)
        async with remote.run_test(size=(120, 40)) as pilot:
            await asyncio.wait_for(remote.subscribed.wait(), 10.0)
            found = await asyncio.to_thread(evaluate)

            def shown() -> bool:
                progress = remote.model.case_progress()
                return progress is not None and progress.rule == met

            await wait_until(pilot, shown, 10.0)
        return found, remote

    found, remote = asyncio.run(run())
    assert len(found.outcomes) == 1 and found.complete
    assert any("not run" in note for note in found.notes), found.notes
    stopped = json.loads((out / "world" / "cases.json").read_text())["stopped"]
    assert stopped["rule"] == "width<=100" and stopped["after"] == 1
    assert len(stopped["not_run"]) == 1
    progress = remote.model.case_progress()
    assert progress is not None and (progress.ended, progress.total) == (1, 2)


def test_a_cancelled_aevaluate_writes_the_interrupted_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelling the task that awaits ``aevaluate`` finalizes the episode in progress as
    incomplete (scores.json and its results.jsonl line) and raises ``CancelledError``; the
    process's SIGTERM handler is the one it had before."""
    mark = tmp_path / "mark"
    monkeypatch.setenv("STREAMEVAL_TEST_MARK", str(mark))
    out = tmp_path / "out"
    before = signal.getsignal(signal.SIGTERM)

    async def run() -> None:
        task = asyncio.create_task(
            streameval.aevaluate(
                SLOW, out=out, actions=[8], seconds_per_key=6, config=CONFIG, record="off"
            )
        )
        while not mark.exists():
            assert not task.done(), task
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    doc = json.loads(next(out.glob("*/008_AD/scores.json")).read_text())
    assert doc["complete"] is False and doc["frames"] < 192
    assert _last_line(out)["status"] == "incomplete"
    assert signal.getsignal(signal.SIGTERM) is before


SCRIPT = """
import asyncio, sys
import streameval
from streameval.engine.config import PipelineConfig
try:
    streameval.evaluate({model!r}, out=sys.argv[1], actions=[8], seconds_per_key=6,
                        record="off", config=PipelineConfig(cuts="scenedetect-content"))
except asyncio.CancelledError:
    sys.exit(130)
"""


# `make test-long`: `make test` keeps the cancelled aevaluate's interrupted record (the same
# road) and the command line's SIGTERM tests (tests/runs/test_interrupts.py)
@pytest.mark.long
def test_sigterm_ends_an_evaluation_as_the_command_line_does(tmp_path: Path) -> None:
    """A script calling ``streameval.evaluate`` and sent SIGTERM mid-episode: the episode in
    progress is written incomplete, as ``attach`` writes it (``tests/runs/test_interrupts.py``),
    and ``evaluate`` raises ``CancelledError`` rather than the process dying on the spot."""
    out, mark = tmp_path / "out", tmp_path / "mark"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT),
           "STREAMEVAL_TEST_MARK": str(mark)}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT.format(model=SLOW), str(out)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        _wait_for(mark)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err.decode()
    assert b"Traceback" not in err, err.decode()
    doc = json.loads(next(out.glob("*/008_AD/scores.json")).read_text())
    assert doc["complete"] is False and doc["frames"] < 192
    assert _last_line(out)["status"] == "incomplete"


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"ray": "local"}, "ray: replays recorded rollouts"),
        ({"rollouts": ["x"], "ray": "local", "publish_mqtt": "mqtt://h:1/s"}, "publish_mqtt:"),
        ({"margin": 2.0}, "margin: only with"),
        ({"stop_when": "width<=4"}, "stop_when: only with cases"),
        ({"repeat": 2, "record": "off"}, "repeat: rollouts are compared by their recordings"),
        ({"existing": "replace"}, "existing: one of keep, overwrite, resume"),
        ({"publish_mqtt": "mqtt://h:1"}, "mqtt://h:1: no session in the URL"),
        ({"cases": "arena", "stop_when": "width<="}, "--stop-when:"),
    ],
)
def test_bad_arguments_are_one_line_before_anything_runs(
    tmp_path: Path, arguments: dict[str, object], named: str
) -> None:
    out = tmp_path / "out"
    with pytest.raises(BadInputError) as info:
        streameval.evaluate(Slider(), out=out, actions=[8], config=CONFIG, **arguments)  # type: ignore[arg-type]
    assert str(info.value).startswith(named), info.value
    assert "\n" not in str(info.value)
    assert not out.exists()  # nothing written, the folder it made taken away

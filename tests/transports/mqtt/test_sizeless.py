"""A served model without the optional ``width``/``height`` (docs/evaluate-your-model.md) on
a real mosquitto broker: ``serve --mqtt`` announces a 0×0 hello (size unknown until the first
frame), and ``attach`` and ``pool offer --cases`` take it like any other. Before, the hello
was rejected by every evaluator and they waited out their timeout ("no answer within 10 s").

Also here: a step that raises on the server ends the episode at once in one line naming the
exception, on both sides; a hello that does not validate is named, not waited for."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiomqtt")

from streameval.protocol.wire import Hello, encode

from streameval.cli.main import main
from streameval.errors import BadInputError
from streameval.transports.live_config import LiveConfig, SourceRequest
from streameval.transports.mqtt.transport import MqttSource
from tests.transports.conftest import Broker

ROOT = Path(__file__).resolve().parents[3]
ADAPTER = '''"""A user's adapter module, found through --app-dir."""
from tests.transports.worlds import FailingWorld, SizelessWorld


def make():
    return SizelessWorld()


def failing():
    return FailingWorld()
'''


def _serve(url: str, factory: str, app_dir: Path, *extra: str) -> subprocess.Popen[bytes]:
    """``streameval serve`` in its own process, the adapter found through ``--app-dir``;
    returns once it printed "serving … on URL"."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "streameval", "serve", f"python:my_adapter:{factory}",
         "--mqtt", url, "--app-dir", str(app_dir), *extra],
        stderr=subprocess.PIPE,
        cwd=app_dir,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.stderr is not None
    line = proc.stderr.readline().decode()
    assert "serving" in line, line
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> str:
    """Stop the server as a user does (Ctrl-C); what it printed after "serving"."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None
    return proc.stderr.read().decode()


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "my_adapter.py").write_text(ADAPTER)
    return folder


@pytest.fixture
def sizeless(broker: Broker, app_dir: Path) -> Iterator[str]:
    url = broker.url("sizeless")
    proc = _serve(url, "make", app_dir, "-v", "--model-name", "no-size")
    try:
        yield url
    finally:
        _stop(proc)


def _scores(out: Path, episode: str) -> dict[str, Any]:
    (path,) = out.glob(f"*/{episode}/scores.json")
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def test_a_model_without_width_and_height_is_attached_over_mqtt(
    sizeless: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    started = time.monotonic()
    # 4.5 s keys: long enough for the control columns (the model is scored, not only run)
    argv = ["attach", sizeless, "--out", str(out), "--actions", "8", "--seconds-per-key", "4.5",
            "--no-tui", "--no-report", "--cuts", "scenedetect-adaptive"]  # fmt: skip
    assert main(argv) == 0
    doc = _scores(out, "008_AD")
    assert doc["complete"] is True and doc["frames"] == 144
    assert doc["model"] == "no-size"  # serve --model-name, in the hello
    # the size was learned from the first frame: the world's own 320×216
    meta = json.loads(next(out.glob("*/008_AD/recording/meta.json")).read_text())
    assert (meta["width"], meta["height"]) == (320, 216)
    trans = doc["metrics"]["direction_accuracy_trans"]
    assert trans["status"] == "official" and trans["normalized"] >= 90, trans
    assert time.monotonic() - started < 120


def test_a_sizeless_model_is_pooled_with_cases(broker: Broker, tmp_path: Path) -> None:
    """``pool offer --cases`` checks every session's hello first: a 0×0 one passes, and the
    case runs from its image through a pool evaluator."""
    from streameval.runs.cases import CaseSelection
    from streameval.runs.pool_cases import PoolCaseJobs, offer_cases
    from streameval.scale.pool import PoolEvaluator
    from streameval.transports.mqtt.serve import serve_mqtt
    from tests.cases.arena_synth import write_arena
    from tests.transports.worlds import CONFIG, SizelessWorld

    url = f"mqtt://127.0.0.1:{broker.port}"
    arena, out = write_arena(tmp_path / "arena_inputs"), tmp_path / "out"
    selection = CaseSelection(arena, seed=3, sets="first_view/real", images="0", actions="6")

    async def scenario() -> Any:
        ready = asyncio.Event()
        model = SizelessWorld()
        server = asyncio.create_task(
            serve_mqtt(model, broker.url("s0"), name="no-size", fps=model.fps,
                       width=0, height=0, ready=ready)
        )  # fmt: skip
        await asyncio.wait_for(ready.wait(), 20)
        member = PoolEvaluator(url, out, name="ev", group="g", config=CONFIG,
                               no_frame_timeout_s=8.0, case_jobs=PoolCaseJobs(out))  # fmt: skip
        stop = asyncio.Event()
        evaluating = asyncio.create_task(member.run(stop))
        for _ in range(200):
            if member.view.evaluators.get("ev") == "alive":
                break
            await asyncio.sleep(0.05)
        try:
            return await offer_cases(url, "g", ["s0"], selection, seconds_per_key=0.5)
        finally:
            stop.set()
            await asyncio.wait_for(asyncio.gather(evaluating, return_exceptions=True), 30)
            server.cancel()
            await asyncio.gather(server, return_exceptions=True)

    report = asyncio.run(scenario())
    assert report.all_complete and report.complete == ["first_view/real/000_006"], report
    doc = json.loads((out / "no-size" / "first_view/real/000_006" / "scores.json").read_text())
    assert doc["complete"] is True and doc["conditioning"]["honoured"] is True


def test_a_step_that_raises_ends_the_episode_in_one_line_on_both_sides(
    broker: Broker, app_dir: Path, tmp_path: Path
) -> None:
    url = broker.url("failing")
    proc = _serve(url, "failing", app_dir)
    out = tmp_path / "out"
    started = time.monotonic()
    try:
        argv = ["attach", url, "--out", str(out), "--actions", "8", "--seconds-per-key", "1",
                "--no-tui", "--no-report", "--cuts", "scenedetect-adaptive"]  # fmt: skip
        code = main(argv)
    finally:
        said = _stop(proc)
    elapsed = time.monotonic() - started
    doc = _scores(out, "008_AD")
    assert doc["complete"] is False and doc["frames"] == 5
    line = "model.step('A') for frame 5 failed: RuntimeError: CUDA out of memory (a test's)"
    assert code != 0
    (error,) = doc["errors"]
    assert error["fatal"] and error["message"] == f"{url}: the server ended the episode: {line}"
    assert f"serve: {line}" in said, said
    assert elapsed < 10 + 30  # ended by the server's bye, not by the 10 s no-frame timeout


def test_a_hello_that_does_not_validate_is_named_at_once(broker: Broker) -> None:
    """A server of another language sending a size of 0×5: the evaluator says why it cannot
    use the hello, instead of waiting out its timeout for one."""
    import aiomqtt

    url = broker.url("bad")

    async def scenario() -> str:
        async with aiomqtt.Client("127.0.0.1", broker.port) as client:
            bad = encode(Hello("m", 16.0, 320, 216))
            bad = bad.replace(b"\xa1w\xcd\x01@", b"\xa1w\x00")  # w 320 → 0
            await client.publish("streameval/bad/status", bad, qos=1, retain=True)
            source = MqttSource(
                SourceRequest(
                    url, ("W",), episode="e", suite="t", config=LiveConfig(connect_timeout_s=10)
                )
            )
            started = time.monotonic()
            with pytest.raises(BadInputError) as caught:
                await source.open_transport()
            assert time.monotonic() - started < 5
            await source.close_transport()
            return str(caught.value)

    words = asyncio.run(scenario())
    assert "the server's hello is refused: hello message: size 0x216 outside 1..4096" in words

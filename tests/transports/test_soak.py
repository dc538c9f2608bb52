"""``attach URL --suite soak --minutes N``: one continuous served episode of N minutes, keys
cycled 20 s each, scored with its runtime block (docs/cli.md#soak); refused where no stream is
played (the demo, an in-process model) or with ``--cases``."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from streameval.protocol.suites import soak_keys

from streameval.cli.main import main
from streameval.runs.builders import network_episodes
from streameval.transports.urls import AttachOptions
from tests.cases.arena_synth import scene, write_image
from tests.transports.case_servers import worldfoundry_case_app
from tests.transports.ws_servers import start


def test_a_soak_is_one_episode_of_its_minutes() -> None:
    assert soak_keys(5.0) == tuple("WDSALR" * 2 + "WDS")  # 15 keys of 20 s
    assert soak_keys(0.1) == ("W",)
    episodes = network_episodes(
        AttachOptions(clock=None, seconds_per_key=3.0), suite="soak", soak_minutes=2
    )
    assert [(e, k, o.seconds_per_key) for e, k, o in episodes] == [
        ("soak-2min", ("W", "D", "S", "A", "L", "R"), 20.0)
    ]
    with pytest.raises(ValueError):
        soak_keys(0)


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--suite", "soak"],
        ["attach", "python:tests.transports.worlds:world", "--suite", "soak"],
        ["attach", "ws://127.0.0.1:9/ws", "--profile", "worldfoundry", "--suite", "soak",
         "--minutes", "0"],
    ],
)  # fmt: skip
def test_a_soak_needs_a_served_model_and_minutes(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--out", str(tmp_path), "--no-tui", "--no-report"]) == 2
    err = capsys.readouterr().err
    assert "soak" in err or "minutes" in err, err
    assert "Traceback" not in err


class _Server:
    """A WorldFoundry-style server on a loop of its own thread (the command line runs its
    own loop) that takes the start image the profile requires (``case_servers``)."""

    def __init__(self, uploads: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        app = worldfoundry_case_app(uploads, [])
        started = asyncio.run_coroutine_threadsafe(start(app), self.loop)
        self.runner: Any
        self.runner, self.port = started.result(30)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.mark.long
def test_a_soak_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = _Server(tmp_path / "uploads")
    try:
        code = main([
            "attach", f"ws://127.0.0.1:{server.port}/api/realtime/ws", "--profile",
            "worldfoundry", "--image", str(write_image(tmp_path / "start.png", scene(2, 320, 216))),
            "--prompt", "A street.",
            "--suite", "soak", "--minutes", "0.5", "--model-name", "wf",
            "--out", str(tmp_path), "--no-tui", "--no-report", "--record", "off",
            "--realtime-target", "12", "--flow", "dis-fast", "--cuts", "scenedetect-adaptive",
        ])  # fmt: skip
    finally:
        server.close()
    assert code == 0, capsys.readouterr().err
    (path,) = tmp_path.rglob("scores.json")
    doc = json.loads(path.read_text())
    assert doc["suite"] == "soak" and doc["episode"] == "soak-0.5min"
    runtime = doc["runtime"]
    assert runtime["realtime"] == "too short" and runtime["realtime_target_fps"] == 12.0
    assert 38 <= runtime["stream_seconds"] <= 42  # two keys of 20 s, one stream
    assert runtime["repeat_frames"] == 0 and runtime["native_frames"] > 500

"""``streameval attach URL URL --profile worldfoundry --cases arena_inputs``: the command line
runs a case set on two WorldFoundry-style servers (written in the tests, ``case_servers``)
side by side, every case once, each started from its image (a refused case is covered by
``test_case_servers``, one session at a time)."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from streameval.cases import HONOURED_SIMILARITY, load_cases
from streameval.cli.main import main
from tests.cases.arena_synth import write_arena
from tests.transports.case_servers import Received, start_app, worldfoundry_case_app

pytestmark = pytest.mark.xdist_group("case-servers")

REFUSED_CAPTION = "Scene 1 of third_view/style"


class Servers:
    """Two servers on a loop of their own thread (the command line runs its own loop)."""

    def __init__(self, uploads: Path) -> None:
        self.received: list[list[Received]] = [[], []]
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.runners = []
        self.ports = []
        for i in range(2):
            app = worldfoundry_case_app(uploads / str(i), self.received[i], refuse=REFUSED_CAPTION)
            runner, port = asyncio.run_coroutine_threadsafe(start_app(app), self.loop).result(30)
            self.runners.append(runner)
            self.ports.append(port)

    def close(self) -> None:
        for runner in self.runners:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.mark.timeout(280)
def test_two_servers_share_a_case_set_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arena = write_arena(tmp_path / "arena_inputs")
    cases = {c.key: c for c in load_cases(arena, sets="first_view/real").cases}
    servers = Servers(tmp_path / "uploads")
    out = tmp_path / "out"
    try:
        urls = [f"ws://127.0.0.1:{p}/api/realtime/ws" for p in servers.ports]
        code = main([
            "attach", *urls, "--profile", "worldfoundry", "--cases", str(arena),
            "--sets", "first_view/real", "--seconds-per-key", "0.5", "--model-name", "wf",
            "--out", str(out), "--no-tui", "--no-report", "--record", "off",
            "--no-frame-timeout", "8", "--max-sessions", "2",
        ])  # fmt: skip
    finally:
        servers.close()
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    received = servers.received[0] + servers.received[1]
    assert len(received) == len(cases)  # every case once, over the two servers
    assert all(servers.received), "both servers ran cases"
    prompts = sorted(c.prompt or "" for c in cases.values())
    assert sorted(r.prompt or "" for r in received) == prompts
    docs = {
        f"{d['case']['set']}/{d['case']['name']}": d
        for d in (json.loads(p.read_text()) for p in out.rglob("scores.json"))
    }
    assert set(docs) == set(cases)
    for key, doc in docs.items():
        assert doc["case"] == cases[key].record()
        assert doc["complete"], (key, doc["errors"])
        assert doc["conditioning"]["sent"] is True
        assert doc["conditioning"]["first_frame_similarity"] >= HONOURED_SIMILARITY
        assert doc["conditioning"]["honoured"] is True
        assert doc["model"] == "wf"  # --model-name, whichever server ran the case
    assert code == 0, err

"""A served model's own figures in the run's evidence: a WorldFoundry-style server's
``chunk_done`` statistics reach the ledger and ``index.html`` through ``streameval.aevaluate``,
labelled as the server's own, while the GPU block says why it was not measured."""

from __future__ import annotations

import asyncio
import html
import json
import sys
from pathlib import Path

import pytest

import streameval
from streameval.runs.hardware import SERVER_SCOPE
from streameval.transports.urls import AttachOptions
from tests.transports.watchdog import watchdog
from tests.transports.worlds import MEMORY_OFF, world
from tests.transports.ws_servers import start, worldfoundry_app


@pytest.mark.timeout(120)
def test_a_servers_chunk_statistics_reach_the_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no GPU, whatever the host

    async def run() -> streameval.Evaluation:
        runner, port = await start(worldfoundry_app(world()))
        dog = asyncio.create_task(watchdog(asyncio.current_task()))
        try:
            return await streameval.aevaluate(
                f"ws://127.0.0.1:{port}/api/realtime/ws",
                out=tmp_path,
                actions=[1],
                seconds_per_key=2.0,
                config=MEMORY_OFF,
                record="off",
                attach=AttachOptions(clock=None, seconds_per_key=2.0, profile="worldfoundry"),
            )
        finally:
            dog.cancel()
            await runner.cleanup()

    result = asyncio.run(run())
    assert result.complete, result.outcomes[0].errors if result.outcomes else result.bad_input
    ledger = json.loads((tmp_path / "ledger.json").read_text())
    server = ledger["hardware"]["server"]
    assert server["reported"] is True and server["scope"] == SERVER_SCOPE
    assert server["chunks"] >= 3
    stats = server["statistics"]
    assert set(stats) >= {"generation_ms", "queue_depth", "dropped_frames"}
    assert (
        stats["generation_ms"]["median"] > 0 and stats["generation_ms"]["count"] == server["chunks"]
    )
    assert ledger["hardware"]["gpu"]["reason"].startswith("not measured: no GPU")
    assert ledger["inputs"]["files"]["profile"]["path"].endswith("worldfoundry.toml")
    assert any(line.startswith("server's own figures (") for line in result.notes)
    index = (tmp_path / "index.html").read_text()
    assert html.escape(SERVER_SCOPE) in index and "<td>generation_ms</td>" in index

"""Live scores published on a real broker and watched elsewhere (``dashboard --mqtt``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from streameval.protocol.wire import ScoresUpdate
from streameval.tui.remote import RemoteDashboardApp

from streameval.engine.pipeline import run_episode
from streameval.transports.remote_watch import format_update, watch_scores
from streameval.transports.scores_publisher import MqttScoresPublisher
from tests.pipeline.helpers import world_source
from tests.transports.conftest import Broker
from tests.transports.worlds import CONFIG


async def _publish_episode(url: str, out: Path) -> None:
    publisher = MqttScoresPublisher(url)
    await run_episode(
        world_source(["W", "L"], 1.0), config=CONFIG, results_dir=out, observers=[publisher]
    )
    await publisher.close()


def test_watcher_receives_progress_and_the_final_scores(broker: Broker, tmp_path: Path) -> None:
    url = broker.url("remote")
    received: list[tuple[str, ScoresUpdate]] = []

    async def run() -> None:
        watcher = asyncio.create_task(watch_scores(url, lambda s, u: received.append((s, u))))
        await asyncio.sleep(0.5)
        await _publish_episode(url, tmp_path)
        await asyncio.sleep(0.5)
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)

    asyncio.run(run())
    assert received and all(s == "remote" for s, _ in received)
    first, final = received[0][1], received[-1][1]
    assert first.keys == ("W", "L") and first.boundaries == (0, 16, 32)
    assert any(u.sx is not None for _, u in received)  # live signals, not only the end
    assert final.final and final.complete
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert final.metrics == {k: v["normalized"] for k, v in scores["metrics"].items()}
    assert "final (complete, 32 frames)" in format_update("remote", final)


def test_remote_dashboard_shows_the_episode(broker: Broker, tmp_path: Path) -> None:
    url = broker.url("remote")

    async def run() -> RemoteDashboardApp:
        app = RemoteDashboardApp(f"mqtt://127.0.0.1:{broker.port}")  # every session
        async with app.run_test(size=(120, 40)) as pilot:
            await asyncio.sleep(0.5)
            await _publish_episode(url, tmp_path)
            for _ in range(40):
                await pilot.pause(0.05)
                ep = app.model.episodes[0] if app.model.episodes else None
                if ep is not None and ep.progress is not None and ep.progress.frame == 32:
                    break
        return app

    app = asyncio.run(run())
    (ep,) = app.model.episodes
    assert ep.name == "remote/clean_WL"
    assert ep.info is not None and ep.info.schedule.keys == ("W", "L")
    assert ep.progress is not None and ep.progress.provisional is not None
    scores = json.loads((tmp_path / "scores.json").read_text())
    shown = {k: m.normalized for k, m in ep.progress.provisional.items()}
    assert shown == {k: v["normalized"] for k, v in scores["metrics"].items()}

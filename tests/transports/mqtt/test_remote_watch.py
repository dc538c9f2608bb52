"""Live scores published on a real broker and watched elsewhere (``dashboard --mqtt``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
from streameval.protocol.schedule import Schedule
from streameval.protocol.wire import ScoresUpdate, decode, encode
from streameval.tui.remote import RemoteDashboardApp, frames_done, outcome_of
from streameval.tui.state import JobStatus

from streameval.core.events import EpisodeInfo
from streameval.core.metric_result import MetricResult
from streameval.engine.pipeline import run_episode
from streameval.transports.mqtt.remote_watch import format_update, metric_results, watch_scores
from streameval.transports.mqtt.scores_publisher import MqttScoresPublisher, wire_results
from tests.engine.helpers import world_source
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
    # the final message repeats the last perceived frame (not one past it) ...
    assert (final.frames, final.frames_done, final.frame, final.key) == (32, 32, 31, "L")
    # ... and every result keeps its status and reason
    assert {k: (m.status, m.reason) for k, m in final.results.items()} == {
        k: (v["status"], v["reason"]) for k, v in scores["metrics"].items()
    }
    assert final.interactivity["frames_received"] == 32


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
                if ep is not None and ep.outcome is not None:
                    break
        return app

    app = asyncio.run(run())
    (ep,) = app.model.episodes
    assert ep.name == "remote/clean_WL"
    assert ep.info is not None and ep.info.schedule.keys == ("W", "L")
    assert ep.status is JobStatus.DONE and ep.outcome is not None and ep.outcome.complete
    assert ep.progress is not None and ep.progress.frames_done == 32
    scores = json.loads((tmp_path / "scores.json").read_text())
    shown = {k: (m.normalized, m.status, m.reason) for k, m in ep.outcome.scores.metrics.items()}
    assert shown == {
        k: (v["normalized"], v["status"], v["reason"]) for k, v in scores["metrics"].items()
    }


def test_results_keep_status_reason_and_scalar_details_through_the_wire() -> None:
    metrics = {
        "direction_accuracy_trans": MetricResult.not_applicable("no fwd/lat segments"),
        "local_memory": MetricResult.missing("no revisit", {"pairs": [1, 2], "n": np.int64(3)}),
        "global_memory": MetricResult.official(
            np.float64(0.5), 78.37, {"pair_source": "strict", "pair_count": 24, "ok": np.bool_(1)}
        ),
        "imaging_sharpness": MetricResult.statistic(0.15, "var"),
    }
    update = ScoresUpdate("e", "m", 63, "R", 16.0, 0, {}, results=wire_results(metrics))
    back = metric_results(decode(encode(update)))  # type: ignore[arg-type]
    assert {k: (m.raw, m.normalized, m.status, m.reason) for k, m in back.items()} == {
        k: (m.raw, m.normalized, m.status, m.reason) for k, m in metrics.items()
    }
    # plain details travel (the memory panel's evidence), per-pair lists stay home
    assert back["global_memory"].details == {
        "pair_source": "strict",
        "pair_count": 24,
        "ok": True,
        "remote": True,
    }
    assert back["local_memory"].details == {"n": 3, "remote": True}


def test_an_older_evaluators_messages_still_end_on_its_frame_count() -> None:
    """Without ``done``/``frames``/``results``: the start message is no frame, the final one
    ends the episode on its ``frame`` count, a normalized None reads missing."""
    start = ScoresUpdate("e", "m", 0, "-", 0.0, 0, {})
    progress = ScoresUpdate("e", "m", 9, "W", 16.0, 0, {"x": None})
    final = ScoresUpdate("e", "m", 32, "-", 0.0, 0, {"x": 50.0}, final=True, complete=True)
    assert [frames_done(u) for u in (start, progress, final)] == [0, 10, 0]
    assert metric_results(progress)["x"].status == "missing"
    info = EpisodeInfo("e", "m", "test", 16.0, Schedule(("W", "L"), 16.0, (0, 16, 32)), "remote")
    outcome = outcome_of(info, final)
    assert outcome.frames == 32 and outcome.complete
    assert outcome.scores.metrics["x"].normalized == 50.0


def test_remote_updates_become_the_local_observer_calls(broker: Broker) -> None:
    """Start, a warning, a repeated progress and the final message (which repeats the last
    frame): one progress, the warning in the log, the end as a local pipeline reports it."""
    schedule = {"keys": ("W", "L"), "boundaries": (0, 16, 32), "episode_fps": 16.0}
    wire = wire_results({"direction_accuracy_trans": MetricResult.official(0.9, 90.0)})

    def update(frame: int, done: int, **kw: object) -> ScoresUpdate:
        return ScoresUpdate("e", "m", frame, "L", 16.0, 0, {}, frames_done=done, **kw, **schedule)  # type: ignore[arg-type]

    async def run() -> RemoteDashboardApp:
        app = RemoteDashboardApp(broker.url("quiet"))
        async with app.run_test(size=(120, 40)) as pilot:
            app.apply("s", update(0, 0))
            app.apply("s", update(0, 0, warning="keys move nothing"))
            app.apply("s", update(31, 32, results=wire))
            app.apply("s", update(31, 32, results=wire))  # the same once more
            app.apply("s", update(31, 32, results=wire, final=True, complete=True, frames=32))
            app.apply("s", update(31, 32, results=wire, final=True, complete=True, frames=32))
            await pilot.pause(0.2)
        return app

    app = asyncio.run(run())
    (ep,) = app.model.episodes
    assert ep.status is JobStatus.DONE and len(ep.trace) == 1
    assert ep.progress is not None and ep.progress.frames_done == 32
    assert ep.outcome is not None and ep.outcome.frames == 32
    assert ep.outcome.scores.metrics["direction_accuracy_trans"].normalized == 90.0
    texts = [line.text for line in app.model.log if line.job == 0]
    assert texts == ["keys move nothing", "e: 32 frames, final scores"]

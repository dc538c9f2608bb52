"""One run, two dashboards: the local one and one watching through a real broker
(``dashboard --mqtt``) must show the same end of the episode — final control scores with
their n/a reasons, the memory panel, ``✓`` and the frame count."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from streameval.tui import DashboardApp
from streameval.tui.remote import RemoteDashboardApp
from streameval.tui.state import JobStatus
from streameval.tui.widgets.control_metrics import FINAL_CLASS, ControlMetrics
from streameval.tui.widgets.episode_header import EpisodeHeader
from streameval.tui.widgets.episode_list import EpisodeList, entry_text
from streameval.tui.widgets.final_metrics import FinalMetrics
from streameval.tui.widgets.throughput import throughput_text

from streameval.core.source import Source
from streameval.runs.jobs import EpisodeJob
from streameval.transports.mqtt.scores_publisher import MqttScoresPublisher
from tests.engine.helpers import world_source
from tests.transports.conftest import Broker
from tests.transports.worlds import CONFIG
from tests.tui.tui_fakes import wait_until, widget_text

SIZE = (120, 40)
KEYS = ("L", "R")  # yaw only: the trans pool is n/a ("no fwd/lat segments") on both sides
SECONDS_PER_KEY = 2.0


def _panels(app: DashboardApp) -> dict[str, str]:
    """What the live screen shows of the selected episode, as plain text."""
    live = app.live
    ep = app.model.selected_episode
    assert ep is not None
    return {
        "control": widget_text(live.query_one(ControlMetrics)),
        "final": widget_text(live.query_one(FinalMetrics)),
        "header": widget_text(live.query_one(EpisodeHeader)),
        "entry": entry_text(ep).plain,
        "status": ep.status.value,
        # the Throughput panel's text without its freshness row (each watcher's own clock)
        "throughput": throughput_text(
            ep.progress, ep.trace.frames_received, live.queue_size, None, ep.final, 40
        ).plain,
        # the episode's own lines of the event log (the command's lines differ: no pipeline)
        "log": "\n".join(
            f"{line.level} {line.text}" for line in app.model.log if line.job == ep.job
        ),
    }


def test_remote_dashboard_ends_the_episode_as_the_local_one(broker: Broker, tmp_path: Path) -> None:
    url = broker.url("parity")
    source = world_source(list(KEYS), SECONDS_PER_KEY)
    total = source.schedule.total_frames

    def open_source() -> Source:
        return source

    async def run() -> tuple[dict[str, str], dict[str, str], RemoteDashboardApp]:
        publisher = MqttScoresPublisher(url)
        local = DashboardApp(
            [EpisodeJob("ep", open_source, tmp_path / "ep")], CONFIG, observers=[publisher]
        )
        remote = RemoteDashboardApp(url)
        async with remote.run_test(size=SIZE) as remote_pilot:
            await asyncio.wait_for(remote.subscribed.wait(), 10.0)
            async with local.run_test(size=SIZE) as local_pilot:
                await wait_until(local_pilot, lambda: local.model.episodes[0].final, 30.0)
                await publisher.close()
                assert publisher.failure is None
                await wait_until(
                    remote_pilot,
                    lambda: bool(remote.model.episodes) and remote.model.episodes[0].final,
                    10.0,
                )
                # both panels ended: let each repaint (urgent, but through the message queue)
                for pilot, app in ((local_pilot, local), (remote_pilot, remote)):
                    await wait_until(
                        pilot, lambda a=app: a.live.query_one(ControlMetrics).has_class(FINAL_CLASS)
                    )
                    await pilot.pause(0.1)
                shown_local, shown_remote = _panels(local), _panels(remote)
                assert remote.live.query_one(EpisodeList).option_count == 1
        return shown_local, shown_remote, remote

    shown_local, shown_remote, remote = asyncio.run(run())
    for panel in shown_local:
        assert shown_remote[panel] == shown_local[panel], panel
    # and what both show is the end of the episode, not a live state
    assert shown_local["status"] == JobStatus.DONE.value
    assert shown_local["entry"].startswith("✓")
    assert f"{total} frames, final scores" in shown_local["log"]
    assert f"frame {total}/{total} (100%)" in shown_local["header"]
    assert f"received {total}" in " ".join(shown_local["throughput"].split())
    assert (
        "Control · final" in shown_local["control"] and "PROVISIONAL" not in shown_remote["control"]
    )
    assert "n/a" in shown_local["control"] and "no fwd/lat segments" in shown_local["control"]
    assert "not reported by the remote evaluator" not in shown_remote["control"]
    assert "computed when the episode ends" not in shown_remote["final"]
    assert "complete" in shown_remote["final"] and "Local Memory" in shown_remote["final"]
    (ep,) = remote.model.episodes
    assert ep.outcome is not None and ep.outcome.complete and ep.outcome.frames == total


@pytest.mark.parametrize("dashboard", [False, True])
def test_the_remote_case_view_shows_the_stop_rule_as_the_evaluator_knows_it(
    broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dashboard: bool
) -> None:
    """``demo --cases --stop-when ... --publish-mqtt`` (plain progress, or the dashboard
    headless) and a watcher through a real broker: the rule is met before the second case,
    and the watcher's case-set view says so, with each column's state beside its band, as the
    evaluator's monitor says it — with the dashboard too, whose run ends before the
    publisher's last message goes out (``runs.run`` closes the publisher after the driver)."""
    import streameval.tui as tui_package
    from streameval.tui import DashboardOptions

    import streameval.cli.evaluate as evaluate_cli
    from streameval.cli.main import main
    from tests.cases.arena_synth import write_arena

    if dashboard:
        real = tui_package.arun_dashboard

        async def headless(jobs, config, observers, stop=None, sigterm=None):  # type: ignore[no-untyped-def]
            options = DashboardOptions(stay_open=False)
            return await real(
                jobs, config, observers, options, headless=True, stop=stop, sigterm=sigterm
            )

        monkeypatch.setattr(evaluate_cli, "use_dashboard", lambda args: True)
        monkeypatch.setattr(tui_package, "arun_dashboard", headless)

    arena = write_arena(tmp_path / "arena_inputs")
    url = broker.url("stop")
    command = [
        "demo", "--cases", str(arena), "--out", str(tmp_path / "out"), "--sets",
        "first_view/real", "--images", "0-1", "--actions", "1,2", "--stop-when", "width<=100",
        *([] if dashboard else ["--no-tui"]), "--no-report", "--cuts", "scenedetect-content",
        "--seconds-per-key", "0.5",
        "--publish-mqtt", url,
    ]  # fmt: skip
    met = "--stop-when 'width<=100': met after 1 case"

    async def run() -> tuple[int, RemoteDashboardApp]:
        remote = RemoteDashboardApp(url)
        async with remote.run_test(size=SIZE) as pilot:
            await asyncio.wait_for(remote.subscribed.wait(), 10.0)
            status = await asyncio.to_thread(main, command)

            def shown() -> bool:
                progress = remote.model.case_progress()
                return progress is not None and progress.rule == met

            await wait_until(pilot, shown, 10.0)
        return status, remote

    status, remote = asyncio.run(run())
    assert status == 0
    progress = remote.model.case_progress()
    assert progress is not None and progress.ended == 1 and progress.total == 2
    assert progress.bands and {b.state for b in progress.bands} == {"width met"}

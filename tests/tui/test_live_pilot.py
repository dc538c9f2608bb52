"""Pilot tests: the dashboard driving the real pipeline over an in-memory rollout.

Each test asserts what is on screen (the text the widgets render) as a known rollout plays:
the current key, progress, the provisional cue, final values, switching episodes, errors, and
``q`` mid-episode finalizing the episode as incomplete with its scores.json written.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from streameval.tui import DashboardApp, DashboardOptions, run_dashboard
from streameval.tui.format import metric_label, metric_value_text
from streameval.tui.screens.episode_segments import EpisodeSegmentsScreen
from streameval.tui.screens.model_episodes import ModelEpisodesScreen
from streameval.tui.state import JobStatus
from streameval.tui.widgets.control_metrics import ControlMetrics
from streameval.tui.widgets.episode_header import EpisodeHeader
from streameval.tui.widgets.episode_list import EpisodeList
from streameval.tui.widgets.event_log import EventLog
from streameval.tui.widgets.final_metrics import FinalMetrics, statistic_label
from streameval.tui.widgets.status_line import StatusLine
from streameval.tui.widgets.throughput import Throughput

from streameval.core.observers import EpisodeObserver, EpisodeOutcome
from streameval.core.source import Source
from streameval.metrics.quality.imaging import STATISTIC_METRICS
from streameval.runs.jobs import EpisodeJob, JobsReport
from tests.tui.tui_fakes import (
    FAST_CONFIG,
    ShiftingSource,
    async_test,
    bad_job,
    content_text,
    shifting_job,
    wait_for_text,
    wait_until,
    widget_text,
)

SIZE = (120, 40)
FRAMES_PER_KEY = 24
FPS = 8.0
TOTAL = 3 * FRAMES_PER_KEY


class Collect(EpisodeObserver):
    """An extra observer, as the CLI passes its results log."""

    def __init__(self) -> None:
        self.ended: list[EpisodeOutcome] = []

    def on_end(self, outcome: EpisodeOutcome) -> None:
        self.ended.append(outcome)


def source(keys: str = "ADL", episode: str = "ep", **kwargs: int | bool) -> ShiftingSource:
    return ShiftingSource(keys, FRAMES_PER_KEY, fps=FPS, episode=episode, **kwargs)  # type: ignore[arg-type]


def report_of(app: DashboardApp) -> JobsReport:
    assert isinstance(app.return_value, JobsReport), app.return_value
    return app.return_value


@async_test
async def test_rollout_plays_key_progress_provisional_then_final(tmp_path: Path) -> None:
    hold = FRAMES_PER_KEY + 10  # inside the D segment
    src = source(episode="ep_adl", hold_at=hold)
    app = DashboardApp([shifting_job(tmp_path, "ep_adl", src)], FAST_CONFIG)
    async with app.run_test(size=SIZE) as pilot:
        live = app.live
        header = await wait_for_text(pilot, live.query_one(EpisodeHeader), f"frame {hold}/{TOTAL}")
        assert "model synthetic" in header and "episode ep_adl" in header
        assert " D  strafe right" in header and "expects Sx −" in header
        assert "segment 2/3" in header
        control = widget_text(live.query_one(ControlMetrics))
        assert "Control · PROVISIONAL" in control and "final at episode end" in control
        assert "computed when the episode ends" in widget_text(live.query_one(FinalMetrics))
        throughput = live.query_one(Throughput)  # follows the 1 s tick
        await wait_until(pilot, lambda: re.search(rf"received\s+{hold}\b", widget_text(throughput)))
        # fps comes from perception's progress, which may lag the reader's count under load
        await wait_until(pilot, lambda: re.search(r"fps\s+\d+\.\d", widget_text(throughput)))
        assert "running ep_adl (1/1)" in widget_text(live.query_one(StatusLine))

        src.gate.set()
        control = await wait_for_text(pilot, live.query_one(ControlMetrics), "Control · final")
        assert "PROVISIONAL" not in control
        outcome = app.model.episodes[0].outcome
        assert outcome is not None and outcome.complete
        for name in ("direction_accuracy_trans", "response_latency_trans"):
            assert metric_value_text(outcome.scores.metrics[name]) in control
        panel = live.query_one(FinalMetrics)
        final = widget_text(panel)
        assert f"complete · {TOTAL} frames" in final
        final = content_text(panel)  # the whole panel, scrolled or not
        for name, result in outcome.scores.metrics.items():  # memory: whatever it computed
            if name in STATISTIC_METRICS:  # one line of imaging statistics
                assert f"{statistic_label(name)} {metric_value_text(result)}" in final
            elif not name.startswith(("direction_", "motion_", "response_")):
                assert metric_label(name) in final
                assert metric_value_text(result) in final
                assert result.status == "official" or (result.reason or "")[:20] in final
        assert "Local Memory" in final  # the pipeline computes memory at episode end
        await wait_for_text(pilot, live.query_one(StatusLine), "done (1 done) — press q")
        await pilot.press("q")
    assert [o.complete for o in report_of(app).outcomes] == [True]


@async_test
async def test_q_mid_episode_finalizes_incomplete_and_writes_scores(tmp_path: Path) -> None:
    src = source(hold_at=20)
    extra = Collect()
    app = DashboardApp([shifting_job(tmp_path, "ep", src)], FAST_CONFIG, [extra])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, app.live.query_one(EpisodeHeader), f"frame 20/{TOTAL}")
        await pilot.press("q")
        await wait_until(pilot, lambda: app.return_value is not None)
    report = report_of(app)
    assert len(report.outcomes) == 1 and not report.outcomes[0].complete
    assert report.outcomes[0].frames == 20 and not report.all_complete
    assert report.stopped  # the CLI exits 130 (a user stop), not 2 (bad input)
    assert [o.complete for o in extra.ended] == [False]  # the CLI's observers saw it too
    scores = json.loads((tmp_path / "ep" / "scores.json").read_text())
    assert scores["complete"] is False and scores["frames"] == 20
    assert src.closed


@async_test
async def test_q_before_episode_start_exits_without_outcome(tmp_path: Path) -> None:
    src = source(hold_start=True)
    app = DashboardApp([shifting_job(tmp_path, "ep", src)], FAST_CONFIG)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.runner.current is not None)
        await pilot.press("q")
        await wait_until(pilot, lambda: app.return_value is not None)
    assert report_of(app).outcomes == [] and app.failure is None
    assert not (tmp_path / "ep" / "scores.json").exists()


@async_test
async def test_episode_list_switches_between_episodes(tmp_path: Path) -> None:
    first, second = source(episode="first"), source("DAR", episode="second", hold_at=12)
    jobs = [shifting_job(tmp_path, "first", first), shifting_job(tmp_path, "second", second)]
    app = DashboardApp(jobs, FAST_CONFIG)
    async with app.run_test(size=SIZE) as pilot:
        live = app.live
        await wait_for_text(pilot, live.query_one(EpisodeList), "✓ first", "▶ second")
        await wait_for_text(pilot, live.query_one(EpisodeHeader), "episode second")

        await pilot.press("left_square_bracket")  # previous episode: the finished one
        header = widget_text(live.query_one(EpisodeHeader))
        assert "episode first" in header and f"frame {TOTAL}/{TOTAL}" in header
        assert "Control · final" in widget_text(live.query_one(ControlMetrics))
        assert "not following" in widget_text(live.query_one(StatusLine))

        await pilot.press("f")  # back to the running one
        assert "episode second" in widget_text(live.query_one(EpisodeHeader))
        assert "PROVISIONAL" in widget_text(live.query_one(ControlMetrics))

        await pilot.click(EpisodeList, offset=(4, 1))  # the first line of the list
        await wait_for_text(pilot, live.query_one(EpisodeHeader), "episode first")
        second.gate.set()
        await wait_until(pilot, lambda: app.model.finished)
        # Not following: the finished episode the user picked stays on screen.
        assert "episode first" in widget_text(live.query_one(EpisodeHeader))
        await pilot.press("q")
    assert [o.info.episode for o in report_of(app).outcomes] == ["first", "second"]


@async_test
async def test_errors_are_shown_as_they_happen(tmp_path: Path) -> None:
    src = source(error_at=5, hold_at=30)
    jobs = [bad_job(tmp_path, "missing"), shifting_job(tmp_path, "glitchy", src)]
    app = DashboardApp(jobs, FAST_CONFIG)
    async with app.run_test(size=SIZE) as pilot:
        live = app.live
        await wait_for_text(
            pilot,
            live.query_one(EventLog),
            "✖ missing.mp4: no such rollout",
            "✖ memory:ep: glitch at frame 5",
        )
        assert not app.model.finished  # still mid-episode: shown as it happened
        assert app.model.episodes[0].status is JobStatus.BAD_INPUT
        assert "✖ missing  bad input" in widget_text(live.query_one(EpisodeList))
        src.gate.set()
        await wait_until(pilot, lambda: app.model.finished)
        await pilot.press("q")
    assert report_of(app).bad_input == ["missing.mp4: no such rollout"]


@async_test
async def test_leaderboard_sort_and_drill_down(tmp_path: Path) -> None:
    jobs = [shifting_job(tmp_path, f"ep{i}", source(episode=f"ep{i}")) for i in range(2)]
    app = DashboardApp(jobs, FAST_CONFIG)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.model.finished)
        await pilot.press("t")
        board = app.leaderboard
        assert app.screen is board
        # the same rule as `streameval table`: 2 episodes < 10, so nothing is ranked, and the
        # notes say so and how to see every model
        assert board.table is not None and board.table.rows == ()
        assert [e.model for e in board.table.excluded] == ["synthetic"]
        notes = board.query_one("#leaderboard-notes")
        await wait_for_text(pilot, notes, "no model passes the exclusion rule", "press a")
        await pilot.press("a")
        assert board.table is not None and [r.model for r in board.table.rows] == ["synthetic"]
        assert board.table.rows[0].n_episodes == 2
        await pilot.press("right", "right", "s")  # cursor onto "Acc T", sort by it
        assert board.sort_column == "direction_accuracy_trans" and board.descending
        detail = board.query_one("#leaderboard-cell")
        await wait_for_text(pilot, detail, "synthetic", "Direction Accuracy (trans)", "2/2")
        await pilot.press("s")
        assert not board.descending
        await pilot.press("n")
        assert board.sort_column is None
        await pilot.press("enter")
        assert isinstance(app.screen, ModelEpisodesScreen)
        assert [r.record.episode for r in app.screen.rows] == ["ep0", "ep1"]
        await pilot.press("enter")
        assert isinstance(app.screen, EpisodeSegmentsScreen)
        assert app.screen.record.episode == "ep0"
        await pilot.press("escape", "escape")
        assert app.screen is board
        await pilot.press("l")
        assert app.screen is app.live
        await pilot.press("q")


@async_test
async def test_leaderboard_header_click_sorts(tmp_path: Path) -> None:
    app = DashboardApp([shifting_job(tmp_path, "ep", source())], FAST_CONFIG)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.model.finished)
        await pilot.press("t")
        grid = app.leaderboard.query_one("#leaderboard-table")
        from textual.widgets import DataTable

        assert isinstance(grid, DataTable)
        model_w, ep_w = (c.get_render_width(grid) for c in list(grid.columns.values())[:2])
        await pilot.click("#leaderboard-table", offset=(model_w + ep_w + 2, 0))
        assert app.leaderboard.sort_column == "direction_accuracy_trans"
        await pilot.press("q")


@async_test
async def test_exits_after_last_episode_when_not_staying_open(tmp_path: Path) -> None:
    app = DashboardApp(
        [shifting_job(tmp_path, "ep", source())],
        FAST_CONFIG,
        options=DashboardOptions(stay_open=False),
    )
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.return_value is not None)
    assert report_of(app).all_complete


def test_run_dashboard_headless_returns_the_report(tmp_path: Path) -> None:
    extra = Collect()
    report = run_dashboard(
        [shifting_job(tmp_path, "ep", source())],
        FAST_CONFIG,
        [extra],
        DashboardOptions(stay_open=False),
        headless=True,
    )
    assert report.all_complete and len(report.outcomes) == 1
    assert extra.ended == report.outcomes
    assert (tmp_path / "ep" / "scores.json").is_file()


def test_closing_runs_on_the_dashboards_loop_after_the_last_episode(tmp_path: Path) -> None:
    """``closing`` (the MQTT scores publisher's ``close``) is awaited on the dashboard's own
    loop once the jobs are over, after every episode ended, also when the pipeline crashed:
    work an observer left on that loop is finished before Textual closes it."""
    extra = Collect()
    seen: list[tuple[int, bool]] = []

    async def closing() -> None:
        await asyncio.sleep(0)  # a coroutine on the running loop, as the publisher's is
        seen.append((len(extra.ended), asyncio.get_running_loop().is_running()))

    options = DashboardOptions(stay_open=False)
    jobs = [shifting_job(tmp_path, "a", source()), shifting_job(tmp_path, "b", source())]
    report = run_dashboard(jobs, FAST_CONFIG, [extra], options, headless=True, closing=closing)
    assert report.all_complete and seen == [(2, True)]

    def broken() -> Source:
        raise RuntimeError("source factory exploded")

    crashed = [EpisodeJob("broken", broken, tmp_path / "broken")]
    with pytest.raises(RuntimeError, match="exploded"):
        run_dashboard(crashed, FAST_CONFIG, [], options, headless=True, closing=closing)
    assert len(seen) == 2


def test_run_dashboard_reraises_a_pipeline_crash(tmp_path: Path) -> None:
    def broken() -> Source:
        raise RuntimeError("source factory exploded")

    job = EpisodeJob("broken", broken, tmp_path / "broken")
    try:
        run_dashboard([job], FAST_CONFIG, [], DashboardOptions(stay_open=False), headless=True)
    except RuntimeError as exc:
        assert "source factory exploded" in str(exc)
    else:
        raise AssertionError("the crash was swallowed")


@async_test
async def test_pipeline_crash_is_shown_and_waits_for_q(tmp_path: Path) -> None:
    def broken() -> Source:
        raise RuntimeError("source factory exploded")

    app = DashboardApp([EpisodeJob("broken", broken, tmp_path / "b")], FAST_CONFIG)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, app.live.query_one(StatusLine), "pipeline failed")
        assert "source factory exploded" in widget_text(app.live.query_one(EventLog))
        await pilot.press("q")
    assert isinstance(app.failure, RuntimeError)

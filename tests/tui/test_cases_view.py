"""The case-set view: a benchmark run's progress per set, time per case, time left, and each
column's running value with its anytime-valid band — live, on disk, and watched over MQTT."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest
from streameval.protocol.schedule import Schedule
from streameval.protocol.stop_state import WireStop
from streameval.protocol.wire import ScoresUpdate, WireCase, decode, encode
from streameval.tui.app import DashboardApp, DashboardOptions
from streameval.tui.case_scores import case_values, read_case_scores
from streameval.tui.cases import (
    CaseBoard,
    case_progress,
    format_duration,
    progress_on_disk,
    read_case_run,
    recorded_entries,
)
from streameval.tui.remote import RemoteDashboardApp
from streameval.tui.screens.cases import CasesScreen, bands_text
from streameval.tui.state import JobStatus
from streameval.tui.widgets.status_line import StatusLine
from textual.widgets import DataTable, Static

from streameval.cli.dashboard import browse_app
from streameval.cli.main import main
from streameval.core.episode.scores import EpisodeScores
from streameval.core.events import EpisodeInfo
from streameval.core.observers import EpisodeOutcome
from streameval.leaderboard.intervals import case_run_intervals
from streameval.results.scores_file import load_episode, scores_document, write_scores
from streameval.runs.jobs import EpisodeJob
from streameval.runs.stop_when import StopMonitor, stop_monitor
from streameval.transports.mqtt.scores_publisher import (
    MqttScoresPublisher,
    carries_stop,
    case_sets,
    wire_case,
    wire_results,
)
from tests.tui.case_sample import (
    ACC,
    RUN,
    SEGMENTS,
    SETS,
    STAB,
    case_metrics,
    make_case,
    write_case_run,
)
from tests.tui.tui_fakes import async_test, content_text, wait_until, widget_text


def test_progress_per_set_bands_and_time_left(tmp_path: Path) -> None:
    path = write_case_run(tmp_path, RUN, pooled=True)
    entries = [replace(e, seconds=30.0) for e in recorded_entries(read_case_run(path))]
    progress = case_progress(entries, SETS)
    real, style = progress.sets
    # a set's value is the table's: real pools 1, 1, 1 and 1, 0.5 (the incomplete case adds
    # nothing), style 0 and 1
    assert (real.done, real.incomplete, real.left) == (2, 1, 1)
    assert (style.done, style.incomplete, style.left) == (2, 0, 1)
    assert (real.means[ACC], style.means[ACC]) == (pytest.approx(90.0), pytest.approx(50.0))
    assert (progress.ended, progress.left, progress.seconds_left) == (5, 2, 60.0)
    assert progress.summary() == "cases 5/7 · 1 incomplete · 2 left · 30 s a case · about 60 s left"
    band = {b.name: b for b in progress.bands}[ACC]
    # the table's interval over the same five cases of seven: pooled, 5.5 of 7 segments
    table = case_run_intervals(path.parent)[ACC]
    assert (band.value, band.low, band.high) == (table.value, table.low, table.high)
    assert (band.cases, band.of) == (5, 7) and band.value == pytest.approx(100 * 5.5 / 7)
    assert band.low <= band.value <= band.high
    assert band.text().startswith(f"{ACC} 78.6 [") and band.text().endswith("after 5 of 7")
    # every case ended: the band is the value itself
    done = case_progress(entries[:3], {"first_view/real": 2, "third_view/style": 1})
    final = {b.name: b for b in done.bands}[ACC]
    assert final.low == final.value == final.high
    assert [b.name for b in progress.bands] == [ACC, STAB]  # table order, columns only


def test_the_bands_on_disk_are_table_ci_s(tmp_path: Path) -> None:
    """One answer for one question: the case-set view of a folder shows, for every column,
    the interval ``table --ci`` computes from the same folder (its schema-checked reader)."""
    path = write_case_run(tmp_path, RUN[:4], pooled=True)
    progress = progress_on_disk(path)
    table = case_run_intervals(path.parent)
    shown = {b.name: (b.value, b.low, b.high, b.cases, b.of) for b in progress.bands}
    assert shown == {
        name: (i.value, i.low, i.high, i.cases, i.of)
        for name, i in table.items()
        if i.value is not None
    }
    assert ACC in shown and shown[ACC][3:] == (4, 7)


def test_durations_read_as_a_human_waits() -> None:
    assert [format_duration(s) for s in (38.2, 720, 3 * 3600 + 300)] == [
        "38 s",
        "12 min",
        "3 h 05 min",
    ]


def test_a_case_run_on_disk_in_order_with_its_case_times(tmp_path: Path) -> None:
    path = write_case_run(tmp_path, RUN)
    run = read_case_run(path)
    entries = recorded_entries(run)
    assert [e.key for e in entries] == [f"{s}/{n}" for s, n, _ in RUN]
    # 60 s a case; the 10 min pause of a resumed run is no case's time
    assert [e.seconds for e in entries] == [60.0, 60.0, None, 60.0, 60.0]
    progress = progress_on_disk(path)
    assert (
        progress.summary() == "cases 5/7 · 1 incomplete · 2 left · 60 s a case · about 2 min left"
    )


def test_the_views_quick_reader_agrees_with_the_validated_one(tmp_path: Path) -> None:
    path = write_case_run(tmp_path, RUN)
    files = sorted(path.parent.rglob("scores.json"))
    assert len(files) == len(RUN)
    for file in files:
        record, quick = load_episode(file), read_case_scores(file)
        assert quick is not None and quick.complete == record.complete
        assert quick.values == case_values(record.metrics, record.complete)
        assert quick.key == f"{record.case_set}/{record.episode}"
    (tmp_path / "junk.json").write_text("[1, 2")
    assert read_case_scores(tmp_path / "junk.json") is None


def test_a_run_a_stop_rule_ended_says_so(tmp_path: Path) -> None:
    path = write_case_run(tmp_path, RUN)
    assert progress_on_disk(path).stop is None
    doc = json.loads(path.read_text())
    doc["stopped"] = {"rule": "width<=40", "after": 5, "not_run": ["a/x", "b/y"], "at": "now"}
    path.write_text(json.dumps(doc))
    assert progress_on_disk(path).stop == (
        "stopped by --stop-when 'width<=40' after 5 cases; 2 not run "
        "(--resume without --stop-when runs them)"
    )
    doc["stopped"] = {"rule": 3}  # a record this reader cannot read: nothing said
    path.write_text(json.dumps(doc))
    assert progress_on_disk(path).stop is None


def test_a_resumed_run_counts_the_cases_it_kept(tmp_path: Path) -> None:
    path = write_case_run(tmp_path, RUN[:2])
    rest = [(s, n) for s, n, _ in RUN[2:]]
    board = CaseBoard.for_cases(rest, [path.parent / s / n for s, n in rest])
    assert board is not None and board.set_totals == SETS
    assert [e.key for e in board.kept] == ["first_view/real/000_001", "third_view/style/000_006"]
    assert CaseBoard.for_cases([None], [tmp_path]) is None  # no case: no case view


def _outcome(name: str, accuracy: float | None) -> EpisodeOutcome:
    info = EpisodeInfo(name, "m", "worldmark", 16.0, Schedule.per_key(("W",), 2.0, 16.0), "t")
    metrics = case_metrics(accuracy if accuracy is not None else 0.0)
    return EpisodeOutcome(info, EpisodeScores(metrics, {}), None, accuracy is not None, 32)


@async_test
async def test_live_case_run_shows_progress_and_bands(tmp_path: Path) -> None:
    jobs = [
        EpisodeJob(n, lambda: None, tmp_path / "m" / s / n, case=make_case(s, n))  # type: ignore[arg-type,return-value]
        for s, n, _ in RUN
    ]
    now = [0.0]
    options = DashboardOptions(autostart=False, clock=lambda: now[0])
    app = DashboardApp(jobs, options=options)
    async with app.run_test(size=(120, 40)) as pilot:
        for job, (_, name, accuracy) in enumerate(RUN[:3]):
            observer = app.observer_for(job)
            observer.on_start(_outcome(name, accuracy).info)
            await pilot.pause()
            now[0] += 40.0
            observer.on_end(_outcome(name, accuracy))
            await pilot.pause()
        status = app.live.query_one(StatusLine)
        await wait_until(pilot, lambda: "cases 3/5" in widget_text(status))
        assert "40 s a case · about 80 s left" in widget_text(status)
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, CasesScreen))
        text = _screen_text(app.screen)
        assert "cases 3/5 · 2 left" in text
        assert f"{ACC} 66.7 [" in text and "after 3 of 5" in text
        table = app.screen.query_one(DataTable)
        assert table.get_row_at(0)[:4] == ["first_view/real", "2", "0", "1"]
        await pilot.press("q")


def _screen_text(screen: CasesScreen) -> str:
    return "\n".join(content_text(w) for w in screen.query(Static))


@async_test
async def test_browsing_a_case_run_opens_on_its_progress_and_follows_it(tmp_path: Path) -> None:
    path = write_case_run(tmp_path, RUN[:2])
    app = browse_app([tmp_path])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, CasesScreen))
        assert isinstance(app.screen, CasesScreen)
        await wait_until(pilot, lambda: "cases 2/7" in _screen_text(app.screen))  # type: ignore[arg-type]
        # the run writes another case: `r` (and the timer) read the folder again
        write_scores(
            path.parent / "first_view/real/001_002",
            scores_document(
                model="m",
                suite="worldmark",
                episode="001_002",
                fps=16.0,
                frames=32,
                metrics=case_metrics(100.0),
                case=make_case("first_view/real", "001_002").record(),
            ),
        )
        await pilot.press("r")
        await wait_until(pilot, lambda: "cases 3/7" in _screen_text(app.screen))  # type: ignore[arg-type]
        assert f"{ACC} 66.7 [" in _screen_text(app.screen)  # type: ignore[arg-type]
        await pilot.press("t")
        await wait_until(pilot, lambda: app.screen is app.leaderboard)
        await pilot.press("q")


def _stop_rule(path: Path, text: str) -> StopMonitor:
    """The ``--stop-when`` monitor the CLI makes for the sample run (``path``: its
    cases.json)."""
    order = json.loads(path.read_text())["order"]
    return stop_monitor(text, 1.0, path.parent, order, ["worldmark"], quality=False)


def _unrun_job(path: Path) -> EpisodeJob:
    """A job of the sample run's case not run yet (never opened in these tests)."""
    case = make_case("first_view/real", "001_005")
    return EpisodeJob("001_005", lambda: None, path.parent / case.set / case.name, case=case)  # type: ignore[arg-type,return-value]


@async_test
async def test_the_stop_rules_state_beside_each_column(tmp_path: Path) -> None:
    """A run with ``--stop-when`` on the dashboard: each column the rule watches says where
    it stands, beside the table's interval."""
    path = write_case_run(tmp_path, RUN, pooled=True)
    rule = f"{ACC}:width<=100,{STAB}:width<=0.001"
    monitor = _stop_rule(path, rule)
    app = DashboardApp([_unrun_job(path)], options=DashboardOptions(autostart=False), stop=monitor)
    progress = app.model.case_progress()
    assert progress is not None
    states = {b.name: b.state for b in progress.bands}
    assert states == {ACC: "width met", STAB: "open"}
    assert progress.rule == f"--stop-when {rule!r}: open"
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, CasesScreen))
        text = _screen_text(app.screen)  # type: ignore[arg-type]
        assert f"{ACC} 78.6 [" in text and "after 5 of 7: width met" in text
        assert "after 5 of 7: open" in text and f"--stop-when {rule!r}: open" in text
        await pilot.press("q")


@async_test
async def test_a_rule_met_ends_the_dashboards_run_and_its_end_is_recorded(tmp_path: Path) -> None:
    """The rule is asked before each case, as without the dashboard: met, no case starts;
    its final state is ``cases.json``'s, which the view of the folder shows afterwards."""
    path = write_case_run(tmp_path, RUN, pooled=True)
    monitor = _stop_rule(path, "width<=100")
    app = DashboardApp([_unrun_job(path)], stop=monitor)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.model.finished)
        assert app.model.rule_met and app.report.outcomes == []
        assert [ep.status for ep in app.model.episodes] == [JobStatus.SKIPPED]
        assert any("met after 5 cases; 1 case(s) not run" in line.text for line in app.model.log)
        await pilot.press("c")
        await wait_until(pilot, lambda: "met after 5 cases" in _screen_text(app.screen))  # type: ignore[arg-type]
        assert "after 5 of 7: width met" in _screen_text(app.screen)  # type: ignore[arg-type]
        await pilot.press("q")
    assert monitor.finish()  # what the command prints; cases.json records the end
    on_disk = progress_on_disk(path)
    assert {b.name: b.state for b in on_disk.bands} == {ACC: "width met", STAB: "width met"}
    assert on_disk.stop is not None and on_disk.stop.startswith(
        "stopped by --stop-when 'width<=100' after 5 cases; 2 not run"
    )


def test_the_case_travels_on_the_wire_and_older_messages_have_none() -> None:
    update = ScoresUpdate(
        "000_001", "m", 0, "-", 0.0, 0, {}, case=WireCase("first_view/real", "000_001", SETS)
    )
    back = decode(encode(update))
    assert isinstance(back, ScoresUpdate) and back.case == update.case
    plain = decode(encode(ScoresUpdate("e", "m", 0, "-", 0.0, 0, {})))
    assert isinstance(plain, ScoresUpdate) and plain.case is None


def test_the_publisher_names_the_case_and_reads_the_runs_sets(tmp_path: Path) -> None:
    path = write_case_run(tmp_path, RUN[:1])
    assert case_sets(path.parent / "first_view/real/000_001") == SETS
    assert case_sets(tmp_path / "elsewhere") == {} and case_sets(None) == {}
    info = _outcome("000_001", 100.0).info
    assert wire_case(info, SETS) is None  # no case record: no case
    info.extra["case"] = make_case("first_view/real", "000_001").record()
    assert wire_case(info, SETS) == WireCase("first_view/real", "000_001", SETS)


def _remote_updates(name: str, set_name: str, stop: WireStop | None = None) -> list[ScoresUpdate]:
    """A remote case's start and final message, through the wire (encoded, decoded); the
    final one with the evaluator's ``stop`` state when its run has a ``--stop-when`` rule."""
    case = WireCase(set_name, name, SETS, max_keys=3)
    segments = SEGMENTS[name]
    final_results = wire_results(case_metrics(100 * sum(segments) / len(segments), segments), True)
    common: Mapping[str, object] = {
        "suite": "worldmark",
        "keys": ("W",),
        "boundaries": (0, 32),
        "episode_fps": 16.0,
        "case": case,
    }
    start = ScoresUpdate(name, "m", 0, "-", 0.0, 0, {}, frames_done=0, **common)  # type: ignore[arg-type]
    final = ScoresUpdate(
        name, "m", 31, "W", 16.0, 0, {}, final=True, complete=True, frames_done=32, frames=32,
        results=final_results, stop=stop, **common,  # type: ignore[arg-type]
    )  # fmt: skip
    updates = [_through_the_wire(u) for u in (start, final)]
    return updates


def _through_the_wire(update: ScoresUpdate) -> ScoresUpdate:
    back = decode(encode(update))
    assert isinstance(back, ScoresUpdate)
    return back


@async_test
async def test_the_remote_watcher_shows_the_case_run_as_a_local_one(tmp_path: Path) -> None:
    """The remote watcher's bands are the table's too: the final messages carry the scored
    segments a pooled column pools, and the run's most keys a case holds. With a
    ``--stop-when`` rule they carry the evaluator's monitor's state: the watcher shows each
    column's state and the rule's line exactly as the local dashboard of that run does,
    before the rule is checked and after it was met (the last final message sent again)."""
    app = RemoteDashboardApp("mqtt://127.0.0.1:1", DashboardOptions(clock=lambda: 0.0))

    async def no_broker() -> None:
        return None

    app._watch = no_broker  # type: ignore[method-assign]
    ran = [r for r in RUN if r[2] is not None][:3]
    # the evaluator's run after these three cases, its rule and its own dashboard
    path = write_case_run(tmp_path, ran, pooled=True)
    monitor = _stop_rule(path, f"{ACC}:width<=100")
    local = DashboardApp(
        [_unrun_job(path)], options=DashboardOptions(autostart=False), stop=monitor
    )
    last: ScoresUpdate | None = None
    async with app.run_test(size=(120, 40)) as pilot:
        for set_name, name, _ in ran:
            for update in _remote_updates(name, set_name, monitor.wire_state()):
                app.apply("s", update)
                last = update
                await pilot.pause()
        progress = app.model.case_progress()
        assert progress is not None and progress.total == 7 and progress.ended == 3
        band = {b.name: b for b in progress.bands}[ACC]
        # the same three cases on disk, as `table --ci` reads them
        table = case_run_intervals(path.parent)[ACC]
        assert (band.value, band.low, band.high, band.of) == (
            table.value,
            table.low,
            table.high,
            table.of,
        )
        assert band.value == pytest.approx(100 * 4.5 / 6)  # pooled, not the mean of 100, 0, 75
        mine = local.model.case_progress()
        assert mine is not None and {b.name: b.state for b in mine.bands}[ACC] == "width met"
        assert bands_text(progress).plain == bands_text(mine).plain
        assert progress.rule == mine.rule == f"--stop-when '{ACC}:width<=100': open"
        await pilot.press("c")
        await wait_until(pilot, lambda: "cases 3/7" in _screen_text(app.screen))  # type: ignore[arg-type]
        assert "after 3 of 7: width met" in _screen_text(app.screen)  # type: ignore[arg-type]
        # checked before a next case: met. The evaluator sends its last end again, with it
        assert monitor.check() and last is not None
        app.apply("s", _through_the_wire(replace(last, stop=monitor.wire_state())))
        local.model.forget_progress()
        mine, progress = local.model.case_progress(), app.model.case_progress()
        assert mine is not None and progress is not None
        assert progress.rule == mine.rule == f"--stop-when '{ACC}:width<=100': met after 3 cases"
        assert bands_text(progress).plain == bands_text(mine).plain
        await wait_until(pilot, lambda: "met after 3 cases" in _screen_text(app.screen))  # type: ignore[arg-type]
        assert progress.ended == 3  # the repeated end is no new case
        await pilot.press("q")


def test_the_publisher_sends_the_rules_state_where_it_can_change(tmp_path: Path) -> None:
    """Start and final messages carry the rule's state (progress messages, many a second, do
    not read the run again); at the end, the last final message goes again only when the
    state changed since it was sent."""
    path = write_case_run(tmp_path, RUN[:3], pooled=True)
    monitor = _stop_rule(path, f"{ACC}:width<=100")
    publisher = MqttScoresPublisher("mqtt://127.0.0.1:1/s", stop=monitor.wire_state)
    start = ScoresUpdate("e", "m", 0, "-", 0.0, 0, {}, frames_done=0)
    live = ScoresUpdate("e", "m", 5, "W", 16.0, 0, {}, frames_done=6)
    final = ScoresUpdate("e", "m", 31, "W", 16.0, 0, {}, final=True, frames_done=32)
    assert carries_stop(start) and carries_stop(final) and not carries_stop(live)
    assert not carries_stop(replace(start, warning="keys move nothing"))
    sent = replace(final, stop=monitor.wire_state())
    assert sent.stop == WireStop(f"{ACC}:width<=100", {ACC: "width met"}, met=False)
    assert asyncio.run(publisher._stop_changed(sent)) is None  # nothing changed since
    assert monitor.check()
    again = asyncio.run(publisher._stop_changed(sent))
    assert again is not None and again.final and again.stop is not None
    assert (again.stop.met, again.stop.after) == (True, 3)
    assert asyncio.run(publisher._stop_changed(live)) is None  # no end to send again
    assert asyncio.run(MqttScoresPublisher("mqtt://127.0.0.1:1/s")._stop_changed(sent)) is None


def test_a_real_case_run_on_the_dashboard_and_its_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``demo --cases`` on the dashboard (headless): the case-set view counts the cases the
    pipeline ran; resumed with more images, it counts the kept ones too."""
    import streameval.tui as tui_package

    import streameval.cli.evaluate as evaluate_cli
    from tests.cases.arena_synth import write_arena

    arena = write_arena(tmp_path / "arena_inputs")
    shown: list[DashboardApp] = []

    async def headless(  # type: ignore[no-untyped-def]
        jobs, config, observers, options=None, headless=False, stop=None, sigterm=None
    ):
        options = DashboardOptions(stay_open=False, catch_sigterm=False)
        app = DashboardApp(jobs, config, observers, options, stop)
        shown.append(app)
        result = await app.run_async(headless=True)
        return result if result is not None else app.report

    monkeypatch.setattr(evaluate_cli, "use_dashboard", lambda args: True)
    monkeypatch.setattr(tui_package, "arun_dashboard", headless)
    run = ["demo", "--cases", str(arena), "--out", str(tmp_path / "out"), "--sets"]
    fast = ["--no-report", "--cuts", "scenedetect-content", "--seconds-per-key", "0.5"]
    # image 0: 000_001 (its other actions, 6 and 9, left out); image 1 adds 001_002; the
    # first run with a stop rule: the dashboard runs it and shows the rule's state
    first_run = ["--images", "0", "--actions", "1", "--stop-when", "width<=100"]
    assert main([*run, "first_view/real", *first_run, *fast]) == 0
    first = shown[-1].model.case_progress()
    assert first is not None and (first.ended, first.total, first.left) == (1, 1, 0)
    assert first.seconds_per_case is not None and first.seconds_per_case > 0
    assert {b.name for b in first.bands} >= {ACC}
    assert all(b.low == b.value == b.high for b in first.bands)  # every case in: exact
    assert {b.state for b in first.bands} == {"width met"}  # an exact value is 0 wide
    assert first.rule == "--stop-when 'width<=100': met after 1 case"
    resume = ["--images", "0-1", "--actions", "1,2", "--resume"]
    assert main([*run, "first_view/real", *resume, *fast]) == 0
    resumed = shown[-1].model.case_progress()
    assert resumed is not None and (resumed.ended, resumed.total) == (2, 2)
    assert shown[-1].model.cases is not None and len(shown[-1].model.cases.kept) == 1

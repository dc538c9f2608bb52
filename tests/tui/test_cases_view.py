"""The case-set view: a benchmark run's progress per set, time per case, time left, and each
column's running value with its anytime-valid band — live, on disk, and watched over MQTT."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from streameval.protocol.schedule import Schedule
from streameval.protocol.wire import ScoresUpdate, WireCase, decode, encode
from streameval.tui.app import DashboardApp, DashboardOptions
from streameval.tui.cases import (
    CaseBoard,
    CaseEntry,
    case_progress,
    case_values,
    format_duration,
    progress_on_disk,
    read_case_run,
    read_case_scores,
    recorded_entries,
)
from streameval.tui.remote import RemoteDashboardApp
from streameval.tui.screens.cases import CasesScreen
from streameval.tui.widgets.status_line import StatusLine
from textual.widgets import DataTable, Static

from streameval.cli.dashboard import browse_app
from streameval.cli.main import main
from streameval.core.events import EpisodeInfo
from streameval.core.observers import EpisodeOutcome
from streameval.engine.scoring import EpisodeScores
from streameval.metrics.anytime import confidence_sequence
from streameval.results.scores_file import load_episode, scores_document, write_scores
from streameval.runs.jobs import EpisodeJob
from streameval.transports.mqtt.scores_publisher import case_sets, wire_case
from tests.tui.case_sample import (
    ACC,
    RUN,
    SETS,
    STAB,
    case_metrics,
    make_case,
    write_case_run,
)
from tests.tui.tui_fakes import async_test, content_text, wait_until, widget_text


def _entries(cases: Sequence[tuple[str, str, float | None]]) -> list[CaseEntry]:
    return [
        CaseEntry(
            f"{s}/{n}",
            s,
            a is not None,
            {} if a is None else {ACC: a, STAB: 90.0},
            30.0,
        )
        for s, n, a in cases
    ]


def test_progress_per_set_bands_and_time_left() -> None:
    progress = case_progress(_entries(RUN), SETS)
    real, style = progress.sets
    assert (real.done, real.incomplete, real.left, real.means[ACC]) == (2, 1, 1, 100.0)
    assert (style.done, style.incomplete, style.left, style.means[ACC]) == (2, 0, 1, 50.0)
    assert (progress.ended, progress.left, progress.seconds_left) == (5, 2, 60.0)
    assert progress.summary() == "cases 5/7 · 1 incomplete · 2 left · 30 s a case · about 60 s left"
    band = {b.name: b for b in progress.bands}[ACC]
    # the incomplete case gives no value: 4 values of the 6 cases that still can
    low, high = confidence_sequence([100.0, 0.0, 100.0, 100.0], 6, bounds=(0.0, 100.0))
    assert (band.cases, band.of, band.low, band.high) == (4, 6, low[-1], high[-1])
    assert band.low <= band.value == 75.0 <= band.high
    assert band.text().startswith(f"{ACC} 75.0 [")
    assert band.text().endswith("after 4 of 6")
    # every case ended: the band is the value itself
    done = case_progress(_entries(RUN[:3]), {"first_view/real": 2, "third_view/style": 1})
    final = {b.name: b for b in done.bands}[ACC]
    assert final.low == pytest.approx(final.value) and final.high == pytest.approx(final.value)
    assert [b.name for b in progress.bands] == [ACC, STAB]  # table order, columns only


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


def _remote_updates(name: str, set_name: str, accuracy: float) -> list[ScoresUpdate]:
    case = WireCase(set_name, name, SETS)
    wire = {ACC: accuracy, STAB: 90.0}
    common: Mapping[str, object] = {
        "suite": "worldmark",
        "keys": ("W",),
        "boundaries": (0, 32),
        "episode_fps": 16.0,
        "case": case,
    }
    start = ScoresUpdate(name, "m", 0, "-", 0.0, 0, {}, frames_done=0, **common)  # type: ignore[arg-type]
    final = ScoresUpdate(
        name, "m", 31, "W", 16.0, 0, wire, final=True, complete=True, frames_done=32, frames=32,
        **common,  # type: ignore[arg-type]
    )  # fmt: skip
    return [start, final]


@async_test
async def test_the_remote_watcher_shows_the_case_run_as_a_local_one(tmp_path: Path) -> None:
    app = RemoteDashboardApp("mqtt://127.0.0.1:1", DashboardOptions(clock=lambda: 0.0))

    async def no_broker() -> None:
        return None

    app._watch = no_broker  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        for set_name, name, accuracy in [r for r in RUN if r[2] is not None][:3]:
            for update in _remote_updates(name, set_name, accuracy or 0.0):
                app.apply("s", update)
                await pilot.pause()
        progress = app.model.case_progress()
        assert progress is not None and progress.total == 7 and progress.ended == 3
        band = {b.name: b for b in progress.bands}[ACC]
        low, high = confidence_sequence([100.0, 0.0, 100.0], 7, bounds=(0.0, 100.0))
        assert (band.low, band.high) == (low[-1], high[-1])
        await pilot.press("c")
        await wait_until(pilot, lambda: "cases 3/7" in _screen_text(app.screen))  # type: ignore[arg-type]
        await pilot.press("q")
    assert np.isfinite(band.value)


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

    def headless(jobs, config, observers, options=None, headless=False):  # type: ignore[no-untyped-def]
        app = DashboardApp(jobs, config, observers, DashboardOptions(stay_open=False))
        shown.append(app)
        result = app.run(headless=True)
        return result if result is not None else app.report

    monkeypatch.setattr(evaluate_cli, "_use_dashboard", lambda args: True)
    monkeypatch.setattr(tui_package, "run_dashboard", headless)
    run = ["demo", "--cases", str(arena), "--out", str(tmp_path / "out"), "--sets"]
    fast = ["--no-report", "--cuts", "scenedetect-content", "--seconds-per-key", "0.5"]
    # image 0: 000_001 (its other actions, 6 and 9, left out); image 1 adds 001_002
    assert main([*run, "first_view/real", "--images", "0", "--actions", "1", *fast]) == 0
    first = shown[-1].model.case_progress()
    assert first is not None and (first.ended, first.total, first.left) == (1, 1, 0)
    assert first.seconds_per_case is not None and first.seconds_per_case > 0
    assert {b.name for b in first.bands} >= {ACC}
    assert all(b.low == pytest.approx(b.value) for b in first.bands)  # every case in: exact
    resume = ["--images", "0-1", "--actions", "1,2", "--resume"]
    assert main([*run, "first_view/real", *resume, *fast]) == 0
    resumed = shown[-1].model.case_progress()
    assert resumed is not None and (resumed.ended, resumed.total) == (2, 2)
    assert shown[-1].model.cases is not None and len(shown[-1].model.cases.kept) == 1

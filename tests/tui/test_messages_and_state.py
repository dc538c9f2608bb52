"""The pipeline → UI path without the pipeline: coalescing, the model, the pure renderers."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from streameval.protocol.schedule import Schedule
from streameval.tui.app import DashboardApp, DashboardOptions
from streameval.tui.messages import EpisodeErrored, EpisodeProgressed
from streameval.tui.state import DashboardModel, JobStatus, SignalTrace
from streameval.tui.widgets.schedule_bar import boundary_columns, lit_columns, render_schedule
from streameval.tui.widgets.signal_plot import (
    DISOBEY,
    NEUTRAL,
    OBEY,
    bar_style,
    bin_samples,
    render_bars,
)

from streameval.core.metric_result import MetricResult
from streameval.core.observers import Progress
from streameval.core.source import Source
from streameval.runs.jobs import EpisodeJob
from tests.tui.sample import feed_episode, sample_info, sample_outcome
from tests.tui.tui_fakes import async_test


def _progress(frame: int, key: str = "A", sx: float | None = 0.5, **kw: Any) -> Progress:
    info = sample_info("e")
    return Progress(
        info=info,
        frame=frame,
        key=key,
        sx=sx,
        srad=None,
        frames_done=frame + 1,
        frames_total=info.schedule.total_frames,
        fps=10.0,
        queue_depth=0,
        dropped=kw.get("dropped", 0),
        provisional=kw.get("provisional"),
    )


def test_progress_coalesces_only_with_the_same_job() -> None:
    a1, a2 = EpisodeProgressed(0, _progress(1)), EpisodeProgressed(0, _progress(2))
    b = EpisodeProgressed(1, _progress(2))
    assert a1.can_replace(a2)  # the queued later frame supersedes the older one
    assert not a1.can_replace(b)
    assert not a1.can_replace(EpisodeErrored(0, "x"))
    assert not EpisodeErrored(0, "x").can_replace(EpisodeErrored(0, "y"))


class CountingApp(DashboardApp):
    handled = 0

    def on_episode_progressed(self, message: EpisodeProgressed) -> None:
        self.handled += 1
        super().on_episode_progressed(message)


def _no_source() -> Source:
    raise AssertionError("not started")


@async_test
async def test_a_burst_of_frames_is_one_repaint_and_loses_no_sample() -> None:
    jobs = [EpisodeJob("e", _no_source, Path("e"))]
    app = CountingApp(jobs, options=DashboardOptions(autostart=False, clock=lambda: 0.0))
    async with app.run_test(size=(120, 40)) as pilot:
        observer = app.observer_for(0)
        feed_episode(observer, "e", until=300, end=False)
        await pilot.pause()
        ep = app.model.episodes[0]
        assert app.handled < 30  # 300 posted
        assert ep.progress is not None and ep.progress.frames_done == 300
        assert len(ep.trace) == 300  # the sparkline history is complete
        assert ep.trace.provisional is not None  # provisional scores survived the merge
        await pilot.press("q")


def test_model_statuses_follow_the_episode() -> None:
    model = DashboardModel.for_jobs(["a", "b", "c"])
    model.error(0, "a.mp4: no such rollout")
    assert model.episodes[0].status is JobStatus.BAD_INPUT
    trace = SignalTrace()
    model.start(1, sample_info("b"), trace, now=1.0)
    assert model.running == 1 and model.selected == 1  # following
    assert model.progress(1, _progress(3), now=2.0) is None
    warning = model.progress(1, _progress(4, dropped=2), now=2.5)
    assert warning is not None and "dropped" in warning.text
    assert model.progress(1, _progress(5, dropped=3), now=3.0) is None  # said once
    model.select(0)
    assert not model.follow  # the user looks elsewhere
    lines = model.end(1, sample_outcome("b", 200, complete=False))
    assert model.episodes[1].status is JobStatus.INCOMPLETE
    assert any("incomplete" in line.text for line in lines)
    model.finish(stopped=True)
    assert model.episodes[2].status is JobStatus.SKIPPED


def test_trace_keeps_gaps_aligned() -> None:
    trace = SignalTrace()
    provisional = {"direction_accuracy_trans": MetricResult.official(0.9, 90.0)}
    trace.append(_progress(0, sx=None))
    trace.append(_progress(1, sx=0.25, provisional=provisional))
    trace.append(_progress(2, sx=0.5))
    assert math.isnan(trace.sx[0]) and list(trace.sx[1:]) == [0.25, 0.5]
    assert trace.provisional is provisional and trace.keys == ["A", "A", "A"]


def test_bar_colours_follow_the_expected_sign() -> None:
    assert bar_style("sx", "A", 0.3) == OBEY and bar_style("sx", "A", -0.3) == DISOBEY
    assert bar_style("sx", "D", -0.3) == OBEY and bar_style("srad", "S", -0.1) == OBEY
    assert bar_style("srad", "A", 0.3) == NEUTRAL  # A drives Sx, not Srad
    assert bar_style("sx", "-", 0.3) == NEUTRAL


def test_bins_map_columns_to_schedule_frames() -> None:
    values = [1.0, 3.0, math.nan, math.nan, -2.0, -4.0]
    keys = ["A", "A", "A", "D", "D", "D"]
    bins = bin_samples(values, keys, width=3, total=12)  # 4 frames a column, 6 seen
    assert bins == [(2.0, "A"), (-3.0, "D")]  # the third column is still in the future
    assert bin_samples(values, keys, width=2, total=None) == [(-2.0, "D"), (-4.0, "D")]
    # Scale = the largest |value| (3): +2 fills 5 eighths above the axis, −3 a full cell below.
    assert render_bars(bins, "sx", rows=2, width=3).plain.split("\n") == ["▅  ", " █ "]


def test_schedule_bar_marks_boundaries_and_progress() -> None:
    schedule = Schedule.per_key("WAD", 2.0, 8.0)  # 48 frames, boundaries at 16 and 32
    assert boundary_columns(schedule, 24) == {8, 16}
    text = render_schedule(schedule, frames_done=20, width=24).plain.split("\n")
    assert text[0].startswith("W") and text[0][9] == "A" and text[0][17] == "D"
    assert text[1][8] == "┃" and text[1][16] == "┃" and len(text[1]) == 24
    assert lit_columns(schedule, 20, 24) == 10

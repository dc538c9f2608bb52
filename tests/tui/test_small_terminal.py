"""At 80×24 the score panels stay on screen after a run."""

from __future__ import annotations

from pathlib import Path

from streameval.tui import DashboardApp
from streameval.tui.widgets.control_metrics import ControlMetrics
from streameval.tui.widgets.final_metrics import FinalMetrics
from streameval.tui.widgets.signal_plot import SignalPlot

from tests.tui.tui_fakes import (
    FAST_CONFIG,
    ShiftingSource,
    async_test,
    shifting_job,
    wait_for_text,
    widget_text,
)

SMALL = (80, 24)


@async_test
async def test_scores_are_on_screen_at_80x24_after_the_run(tmp_path: Path) -> None:
    src = ShiftingSource("AD", 24, fps=8.0, episode="ep")
    app = DashboardApp([shifting_job(tmp_path, "ep", src)], FAST_CONFIG)
    async with app.run_test(size=SMALL) as pilot:
        live = app.live
        plot = live.query_one("#plot-sx", SignalPlot)
        assert live.has_class("compact")
        await wait_for_text(pilot, live.query_one(ControlMetrics), "Control · final")
        await wait_for_text(pilot, live.query_one(FinalMetrics), "Local Memory")
        await pilot.pause()
        screen = live.region
        for widget in (live.query_one(ControlMetrics), live.query_one(FinalMetrics)):
            region = widget.region
            assert region.height >= 4 and screen.contains_region(region), (widget, region)
        assert "Revisit Memory" in widget_text(live.query_one(FinalMetrics))
        assert not plot.display  # the plots gave way to the scores
        await pilot.press("q")

"""The dashboard shows a memory_loop episode's return gate as it happens: the control panel's
subtitle says whether and where the camera departed and came back."""

from __future__ import annotations

from streameval.tui.widgets.control_metrics import ControlMetrics, gate_state
from textual.app import App, ComposeResult

from streameval.core.metric_result import MetricResult
from streameval.metrics.worldatlas.gate_online import GATE_METRIC, GateProgress
from tests.tui.tui_fakes import async_test


def _gate(departure: int | None, back: int | None) -> dict[str, MetricResult]:
    progress = GateProgress(
        frames=300,
        departed=departure is not None,
        departure_frame=departure,
        returned=back is not None,
        return_frame=back,
        revisit_of=None if back is None else 3,
        max_departure=0.4 if departure is None else 2.0,
        required_departure=1.25,
    )
    return {GATE_METRIC: progress.result()}


def test_gate_state_follows_the_online_gate() -> None:
    assert gate_state(_gate(None, None)) == "return gate: not departed yet (d 0.4 of 1.2)"
    assert gate_state(_gate(65, None)) == "return gate: departed at frame 65, no return yet"
    assert gate_state(_gate(65, 208)) == "return gate: departed at frame 65, returned at frame 208"
    assert gate_state({}) is None and gate_state(None) is None
    final = MetricResult(1.0, 1.0, "official", None, {"provisional": False})
    assert gate_state({GATE_METRIC: final}) is None  # the kernel's verdict is not "as it happens"


class _Panel(App[None]):
    def compose(self) -> ComposeResult:
        yield ControlMetrics(id="control")


@async_test
async def test_the_control_panel_subtitle_shows_the_gate_while_provisional() -> None:
    app = _Panel()
    async with app.run_test(size=(100, 20)) as pilot:
        panel = app.query_one(ControlMetrics)
        panel.show(_gate(65, None), final=False, complete=False)
        await pilot.pause()
        assert panel.border_subtitle == (
            "return gate: departed at frame 65, no return yet · final at episode end"
        )
        panel.show({}, final=False, complete=False)
        await pilot.pause()
        assert panel.border_subtitle == "updating · final at episode end"
        panel.show(_gate(65, 208), final=True, complete=True)
        await pilot.pause()
        assert panel.border_subtitle is None and panel.border_title == "Control · final"

"""The four control metrics × (trans, rot), with an unmissable provisional cue.

While the episode runs the values come from the pipeline's provisional scoring (every
``provisional_every_s``): the panel's border and title are yellow, the values italic, and the
subtitle says they become final at episode end. At the end the same panel turns green with the
final values (or red-bordered "final · incomplete" when the episode was cut short). On a
memory_loop episode the subtitle follows the return gate instead: departed at which frame,
returned at which (``gate_state``).
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from streameval.tui.format import metric_value_text
from textual.widgets import Static

from streameval.core.metric_result import MetricResult
from streameval.metrics.registry import metric_names
from streameval.metrics.worldatlas.gate_online import GATE_METRIC

ROWS: tuple[tuple[str, str], ...] = (
    ("direction_accuracy", "Direction accuracy"),
    ("direction_purity", "Direction purity"),
    ("motion_stability", "Motion stability"),
    ("response_latency", "Response latency"),
)
POOLS = ("trans", "rot")
PROVISIONAL_CLASS, FINAL_CLASS, INCOMPLETE_CLASS = "provisional", "final", "incomplete"


def _note(results: list[MetricResult | None]) -> str:
    """The reasons of the row's non-official results, deduplicated (``n/a`` needs a why)."""
    reasons: list[str] = []
    for r in results:
        if r is not None and r.status != "official" and r.reason and r.reason not in reasons:
            reasons.append(r.reason)
    return "; ".join(reasons)


def gate_state(metrics: dict[str, MetricResult] | None) -> str | None:
    """The memory_loop return gate's provisional state as it happens (the pipeline's online
    gate, ``metrics/worldatlas/gate_online.py``), for the panel's subtitle; None otherwise."""
    result = metrics.get(GATE_METRIC) if metrics else None
    if result is None or not result.details.get("provisional"):
        return None
    d = result.details
    if not d.get("departure_reached"):
        return (
            f"return gate: not departed yet (d {float(d['max_departure']):.2g} of "
            f"{float(d['required_departure']):.2g})"
        )
    back = f"returned at frame {d['return_frame']}" if d.get("returned") else "no return yet"
    return f"return gate: departed at frame {d['departure_frame']}, {back}"


def control_table(metrics: dict[str, MetricResult], provisional: bool) -> Table:
    """The 4×2 grid; italic values while provisional."""
    table = Table(box=None, expand=True, pad_edge=False, show_edge=False)
    table.add_column("", no_wrap=True)
    table.add_column("trans", justify="right", no_wrap=True, min_width=7)
    table.add_column("rot", justify="right", no_wrap=True, min_width=7)
    table.add_column("", style="dim", overflow="ellipsis", no_wrap=True, ratio=1)
    value_style = "italic yellow" if provisional else "bold"
    for prefix, label in ROWS:
        results = [metrics.get(f"{prefix}_{pool}") for pool in POOLS]
        cells = [
            Text(
                metric_value_text(r),
                style=value_style if r is not None and r.status == "official" else "dim",
            )
            for r in results
        ]
        table.add_row(label, *cells, _note(results))
    return table


class ControlMetrics(Static):
    """Control metrics of the selected episode: provisional while it runs, final after."""

    _source: object = None
    _flags: tuple[bool, bool] | None = None

    def show(self, metrics: dict[str, MetricResult] | None, *, final: bool, complete: bool) -> None:
        """Show ``metrics`` (the scores dict as the pipeline produced it; its control entries
        are picked); a repaint only when a new dict arrives or the episode ends."""
        if metrics is self._source and (final, complete) == self._flags:
            return
        self._source, self._flags = metrics, (final, complete)
        gate = gate_state(metrics)
        metrics = {
            name: metrics[name]
            for name in metric_names(family="control")
            if metrics and name in metrics
        }
        self.set_class(not final, PROVISIONAL_CLASS)
        self.set_class(final and complete, FINAL_CLASS)
        self.set_class(final and not complete, INCOMPLETE_CLASS)
        if not final:
            self.border_title = "Control · PROVISIONAL"
            self.border_subtitle = f"{gate or 'updating'} · final at episode end"
        elif complete:
            self.border_title = "Control · final"
            self.border_subtitle = None
        else:
            self.border_title = "Control · final · incomplete episode"
            self.border_subtitle = "scored on the frames received"
        body: RenderableType
        if not metrics:
            body = Text(
                "first provisional scores after a few frames…" if not final else "no scores",
                style="dim",
            )
        else:
            body = control_table(metrics, provisional=not final)
        self.update(body, layout=False)  # fixed size (CSS): no re-layout

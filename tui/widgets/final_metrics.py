"""Episode-end results: how the episode ended and every metric beyond the control ones.

Memory and quality metrics need the whole episode, so they appear only when the
pipeline finalizes it. Whatever the outcome carries is shown — the panel does not hard-code
metric names — each with its status and, when it has no value, the reason.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from streameval.tui.format import metric_label, metric_value_text
from textual.widgets import Static

from streameval.core.metric_result import MetricResult
from streameval.core.observers import EpisodeOutcome
from streameval.metrics.interactivity import format_figure, registered_figures
from streameval.metrics.quality.imaging import STATISTIC_METRICS
from streameval.metrics.registry import metric_names
from streameval.metrics.worldatlas.realtime_scores import REALTIME_METRICS, raw_summary


def outcome_line(outcome: EpisodeOutcome) -> Text:
    """``complete · 288 frames · 2.2× real time`` (or ``INCOMPLETE`` with the reason)."""
    text = Text()
    if outcome.complete:
        text.append("complete", style="bold green")
    else:
        text.append("INCOMPLETE", style="bold red")
    text.append(f" · {outcome.frames} frames")
    rt = outcome.interactivity.get("realtime_factor")
    if isinstance(rt, float):
        text.append(f" · {rt:.1f}× real time")
    return text


def statistic_label(name: str) -> str:
    """``imaging_sharpness`` -> ``sharpness``, ``temporal_flicker`` -> ``flicker``."""
    return name.removeprefix("imaging_").removeprefix("temporal_")


def statistics_line(outcome: EpisodeOutcome) -> Text | None:
    """The CPU imaging statistics on one line (they are no table columns, and a row each
    would push the memory and quality rows out of the panel)."""
    found = [
        (n, outcome.scores.metrics[n]) for n in STATISTIC_METRICS if n in outcome.scores.metrics
    ]
    if not found:
        return None
    return _figures_line(
        "imaging",
        [
            (statistic_label(name), metric_value_text(m), m.status == "official")
            for name, m in found
        ],
    )


def interactivity_line(outcome: EpisodeOutcome) -> Text | None:
    """A served model's wall-time interactivity on one line, labels and units from the
    registry (family ``interactivity``). Only for network sessions (the block names a
    ``transport``): in process the outcome line's real-time factor already says it, and
    arrival times there time our own loop, not a server."""
    block = outcome.interactivity
    if "transport" not in block:
        return None
    figures = registered_figures(block)
    if not figures:
        return None
    return _figures_line(
        "interactivity",
        [(spec.header, format_figure(spec, value), True) for spec, value in figures],
    )


def _figures_line(title: str, figures: list[tuple[str, str, bool]]) -> Text:
    """``title label value · label value …`` on one line; a value in bold when it is
    official (the third element), dim otherwise."""
    text = Text(f"{title} ", style="dim")
    for k, (label, value, official) in enumerate(figures):
        if k:
            text.append(" · ", style="dim")
        text.append(f"{label} ")
        text.append(value, style="bold" if official else "dim")
    return text


def evidence(m: MetricResult, name: str = "") -> str:
    """What a closed-loop memory value stands on: ``24 pairs · strict · cpu-colorhist-rbf``
    (pair count, pair_source, backend); a real-time value's raw figure in its own units
    (``0.844 s · 13.5 frames · 1.50 chunks``); empty for other metrics."""
    d = m.details
    if name in REALTIME_METRICS and m.raw is not None:
        return raw_summary(name, m.raw, d)
    if "pair_source" not in d or "pair_count" not in d:
        return ""
    backend = d.get("feature_backend") or d.get("gram_backend") or ""
    parts = [f"{d.get('scored_pair_count', d['pair_count'])} pairs", str(d["pair_source"])]
    return " · ".join(parts + ([str(backend)] if backend else []))


def other_metrics_table(outcome: EpisodeOutcome) -> RenderableType:
    control = metric_names(family="control")  # shown by the control panel
    others = {
        name: m
        for name, m in outcome.scores.metrics.items()
        if name not in control and name not in STATISTIC_METRICS
    }
    if not others:
        return Text("no memory or quality metrics in this run", style="dim")
    table = Table(box=None, expand=True, pad_edge=False, show_header=False)
    table.add_column(no_wrap=True)
    table.add_column(justify="right", no_wrap=True, min_width=7)
    table.add_column(style="dim", overflow="ellipsis", no_wrap=True, ratio=1)
    for name, m in others.items():
        official = m.status == "official"
        table.add_row(
            metric_label(name),
            Text(metric_value_text(m, name), style="bold" if official else "dim"),
            evidence(m, name) if official else (m.reason or m.status),
        )
    return table


class FinalMetrics(Static):
    """Memory · quality · outcome of the selected episode; a placeholder until it ends."""

    _outcome: EpisodeOutcome | None = None
    _shown = False

    def show(self, outcome: EpisodeOutcome | None) -> None:
        if self._shown and outcome is self._outcome:
            return
        self._shown, self._outcome = True, outcome
        self.border_title = "Memory · quality"
        if outcome is None:
            self.border_subtitle = None
            self.update(Text("computed when the episode ends", style="dim italic"), layout=False)
            return
        self.border_subtitle = "final"
        parts: list[RenderableType] = [outcome_line(outcome)]
        for line in (interactivity_line(outcome), statistics_line(outcome)):
            if line is not None:
                parts.append(line)
        parts.append(other_metrics_table(outcome))
        self.update(Group(*parts), layout=False)

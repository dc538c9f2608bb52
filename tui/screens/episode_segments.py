"""Drill-down, episode → segments: each control column's per-segment scores.

Rows come from ``streameval.leaderboard.episode_segments`` (the metrics' ``details["segments"]``).
A segment's own value is on the kernel's scale — accuracy in [−1, 1], the others in [0, 1] —
so it is shown with three decimals, not as a 0–100 table value. Non-scored segments show
their status and reason.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from streameval.tui.format import metric_value_text
from streameval.tui.widgets.schedule_bar import key_colour
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from streameval.leaderboard import EpisodeRecord, column_by_name, episode_segments


class EpisodeSegmentsScreen(Screen[None]):
    """The segments of one episode, for every control column."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, record: EpisodeRecord) -> None:
        super().__init__()
        self.record = record

    def compose(self) -> ComposeResult:
        yield Static(id="drill-title")
        yield DataTable(id="segments-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="drill-notes")
        yield Footer()

    def on_mount(self) -> None:
        rec = self.record
        self.query_one("#drill-title", Static).update(
            Text.assemble(
                ("Leaderboard › ", "dim"),
                (rec.model, "bold"),
                (" › ", "dim"),
                (rec.episode, "bold"),
                ("" if rec.complete else "  (incomplete run)", "yellow"),
            )
        )
        grid = self.query_one(DataTable)
        for label, key in (
            ("Metric", "metric"),
            ("Episode value", "episode"),
            ("#", "index"),
            ("Key", "key"),
            ("Frames", "frames"),
            ("Status", "status"),
            ("Segment value", "value"),
            ("Reason", "reason"),
        ):
            grid.add_column(label, key=key)
        rows = episode_segments(rec)
        for i, seg in enumerate(rows):
            try:
                label = column_by_name(seg.column).label
            except KeyError:
                label = seg.column
            frames = (
                f"{seg.start_frame}–{seg.end_frame}"
                if seg.start_frame is not None and seg.end_frame is not None
                else ""
            )
            first = i == 0 or rows[i - 1].column != seg.column
            grid.add_row(
                Text(label if first else "", style="bold"),
                Text(
                    metric_value_text(rec.metrics.get(seg.column)) if first else "",
                    justify="right",
                ),
                Text("" if seg.index is None else str(seg.index), justify="right"),
                Text(seg.key or "", style=f"bold {key_colour(seg.key or '-')}"),
                frames,
                Text(seg.status, style="" if seg.status == "scored" else "dim"),
                Text("" if seg.value is None else f"{seg.value:+.3f}", justify="right"),
                Text(seg.reason or "", style="dim"),
            )
        notes = (
            "no segment details in this scores.json (older file or no control metrics)"
            if not rows
            else "segment values on the kernel's scale: accuracy −1…1, others 0…1 · Escape: back"
        )
        self.query_one("#drill-notes", Static).update(Text(notes, style="dim"))

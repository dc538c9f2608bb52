"""Drill-down, model → episodes: one row per episode with its own cells.

Rows come from ``streameval.leaderboard.model_episodes`` (the same cells the table aggregates), so
an episode that is ``missing`` here is exactly one the model's cell counts as missing.
Enter opens the episode's segments; ``o`` opens its report.html in the browser (drawn first
when the folder has none); Escape goes back to the leaderboard.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from streameval.tui.screens.episode_segments import EpisodeSegmentsScreen
from streameval.tui.widgets.score_cells import cell_renderable
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from streameval.leaderboard import EpisodeRow, MasterTable, model_episodes


class ModelEpisodesScreen(Screen[None]):
    """The episodes of one model."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("o", "open_report", "Open report"),
    ]

    def __init__(self, table: MasterTable, model: str) -> None:
        super().__init__()
        self.table = table
        self.model_name = model
        self.rows: list[EpisodeRow] = model_episodes(table, model)

    def compose(self) -> ComposeResult:
        yield Static(id="drill-title")
        yield DataTable(id="episodes-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="drill-notes")
        yield Footer()

    def on_mount(self) -> None:
        row = self.table.row(self.model_name)
        self.query_one("#drill-title", Static).update(
            Text.assemble(
                ("Leaderboard › ", "dim"),
                (self.model_name, "bold"),
                f"  {row.n_episodes} episodes",
                ("  suites " + ", ".join(row.suites), "dim"),
            )
        )
        grid = self.query_one(DataTable)
        grid.add_column("Episode", key="episode")
        grid.add_column("Run", key="run")
        grid.add_column("Frames", key="frames")
        for column in self.table.columns:
            grid.add_column(column.short, key=column.name)
        for ep in self.rows:
            rec = ep.record
            grid.add_row(
                Text(rec.episode, style="bold"),
                Text("complete", style="green")
                if rec.complete
                else Text("incomplete", style="yellow"),
                Text("" if rec.frames is None else str(rec.frames), justify="right"),
                *(cell_renderable(ep.cells[c.name]) for c in self.table.columns),
                key=str(rec.path),
            )
        self.query_one("#drill-notes", Static).update(
            Text(
                "Enter: the episode's segments · o: its report.html in the browser · "
                "Escape: back · incomplete runs count as missing in the table",
                style="dim",
            )
        )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self.rows):
            self.app.push_screen(EpisodeSegmentsScreen(self.rows[event.cursor_row].record))

    def action_open_report(self) -> None:
        row = self.query_one(DataTable).cursor_row
        if not 0 <= row < len(self.rows):
            return
        results_dir = self.rows[row].record.results_dir
        report = results_dir / "report.html"
        if not report.is_file():
            from streameval.report import write_episode_report

            try:
                report = write_episode_report(results_dir)
            except Exception as exc:  # a view: tell the user, keep browsing
                self.notify(f"{results_dir}: no report ({exc})", severity="error")
                return
        self.notify(f"opening {report}")
        self.app.open_url(report.resolve().as_uri())

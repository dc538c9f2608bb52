"""The leaderboard: the master table of the results written so far.

Rows, cells, exclusions and ranks come from ``streameval.leaderboard.tabulate`` over the results
dirs of the episodes finished in this command plus any dirs given up front; sorting reuses
``leaderboard.sort_rows``. The rule is ``streameval table``'s (the published one: at least ten
episodes, not failing uniformly), so both show the same ranking; excluded models are still
shown, dimmed and struck through under the ranked ones, with their reasons. When the rule
leaves no model ranked the notes say so, and ``a`` toggles every model in (``--include-all``).

Keys: ``s`` sorts by the column under the cursor (again: reverse), clicking a header does the
same, ``n`` sorts by model name, Enter drills down into the model's episodes, ``r`` reloads,
``a`` includes every model (again: back to the rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from streameval.tui.screens.model_episodes import ModelEpisodesScreen
from streameval.tui.state import DashboardModel
from streameval.tui.widgets.score_cells import cell_renderable
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from streameval.leaderboard import (
    INCLUDE_ALL,
    ExclusionRule,
    MasterTable,
    ModelRow,
    sort_rows,
    tabulate,
)
from streameval.leaderboard.rounding import RICH_STYLES

MODEL_KEY, EPISODES_KEY = "model", "episodes"


class LeaderboardScreen(Screen[None]):
    """Master table across models, sortable, with drill-down."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "sort_cursor", "Sort by column"),
        Binding("n", "sort_name", "Sort by name"),
        Binding("r", "reload", "Reload"),
        Binding("a", "toggle_all", "All models"),
    ]

    def __init__(
        self,
        model: DashboardModel,
        extra_dirs: Sequence[Path] = (),
        rule: ExclusionRule | None = None,
    ) -> None:
        super().__init__(id="leaderboard")
        self.model = model
        self.extra_dirs = tuple(extra_dirs)
        self.rule = rule or ExclusionRule()
        self.default_rule = self.rule
        self.table: MasterTable | None = None
        self.sort_column: str | None = None
        self.descending = True
        self._stale = True
        self._shown: list[str] = []  # model of each displayed row
        self._published: list[str] = []  # where each model's split lands on the published board

    def compose(self) -> ComposeResult:
        yield Static(id="leaderboard-title")
        yield DataTable(id="leaderboard-table", cursor_type="cell", zebra_stripes=True)
        yield Static(id="leaderboard-cell")
        yield Static(id="leaderboard-notes")
        yield Footer()

    def on_mount(self) -> None:
        self.reload()

    def on_screen_resume(self) -> None:
        if self._stale:
            self.reload()

    def results_changed(self) -> None:
        """An episode finished: reload now if shown, else when next shown."""
        self._stale = True
        if self.is_current:
            self.reload()

    # -- data -----------------------------------------------------------------------------

    def paths(self) -> list[Path]:
        return [*self.extra_dirs, *self.model.results_dirs]

    def reload(self) -> None:
        paths = self.paths()
        self.table = tabulate(paths, rule=self.rule) if paths else None
        self._published = self._placements(paths)
        self._stale = False
        self.fill()

    def _placements(self, paths: Sequence[Path]) -> list[str]:
        """One line per WorldMark split the results hold cases of and model placed there:
        the ranks its values (or intervals) allow among the published rows
        (``table --published worldmark``)."""
        if self.table is None:
            return []
        from streameval.leaderboard.beside_formats import published_splits, summary_lines

        table = self.table
        episodes = [e for r in (*table.rows, *(x.row for x in table.excluded)) for e in r.episodes]
        return summary_lines(published_splits(episodes, paths))

    def sorted_rows(self) -> list[ModelRow]:
        if self.table is None:
            return []
        return sort_rows(self.table.rows, self.sort_column, self.descending)

    def fill(self) -> None:
        grid = self.query_one("#leaderboard-table", DataTable)
        cursor = grid.cursor_coordinate
        grid.clear(columns=True)
        title = self.query_one("#leaderboard-title", Static)
        notes = self.query_one("#leaderboard-notes", Static)
        if self.table is None:
            title.update(Text("Leaderboard", style="bold"))
            notes.update(Text("no results yet: each finished episode appears here", style="dim"))
            self._shown = []
            return
        table = self.table
        arrow = "▼" if self.descending else "▲"
        name_label = "Model" + (" ▲" if self.sort_column in (None, MODEL_KEY) else "")
        grid.add_column(name_label, key=MODEL_KEY)
        grid.add_column("Ep.", key=EPISODES_KEY)
        for column in table.columns:
            label = column.short + (f" {arrow}" if column.name == self.sort_column else "")
            grid.add_column(label, key=column.name)
        rows = self.sorted_rows()
        excluded = [e.row for e in table.excluded]
        for row, dim in [*((r, False) for r in rows), *((r, True) for r in excluded)]:
            cells = [cell_renderable(row.cells[c.name], bounds=False) for c in table.columns]
            if dim:
                cells = [Text(c.plain, style="dim strike", justify="right") for c in cells]
            grid.add_row(
                Text(row.model, style="dim" if dim else "bold"),
                Text(str(row.n_episodes), justify="right"),
                *cells,
                key=row.model,
            )
        self._shown = [r.model for r in [*rows, *excluded]]
        if self._shown:
            grid.move_cursor(
                row=min(cursor.row, len(self._shown) - 1),
                column=min(cursor.column, len(table.columns) + 1),
            )
        title.update(
            Text.assemble(
                ("Leaderboard", "bold"),
                f"  {table.summary()}",
                ("  sorted by ", "dim"),
                (self.sort_column or "model name", "dim"),
            )
        )
        notes.update(self._notes(table))

    def _notes(self, table: MasterTable) -> Text:
        text = Text()
        for i, (rank, style) in enumerate(RICH_STYLES.items()):
            text.append(", " if i else "", style="dim")
            text.append(rank, style=style)
        text.append(
            " per column (official cells, ≥ 3 models) · (k/N) measured/applicable · "
            "Enter: episodes · s: sort",
            style="dim",
        )
        if not table.rows and table.excluded:
            text.append(
                f"\nno model passes the exclusion rule (at least {self.rule.min_episodes} "
                "episodes, not failing uniformly): press a to rank every model",
                style="bold yellow",
            )
        elif self.rule is INCLUDE_ALL:
            text.append("\nevery model ranked (a: back to the exclusion rule)", style="dim")
        for e in table.excluded:
            text.append(f"\nexcluded {e.model}: {'; '.join(e.reasons)}", style="yellow")
        for err in table.errors:
            text.append(f"\n✖ {err}", style="red")
        for note in table.notes:
            text.append(f"\n▲ {note}", style="yellow")
        for line in self._published:
            text.append(f"\n{line}", style="cyan")
        return text

    # -- actions --------------------------------------------------------------------------

    def _sort_by(self, key: str) -> None:
        if key in (MODEL_KEY, EPISODES_KEY):
            self.sort_column, self.descending = None, True
        elif key == self.sort_column:
            self.descending = not self.descending
        else:
            self.sort_column, self.descending = key, True
        self.fill()

    def action_sort_cursor(self) -> None:
        if self.table is None:
            return
        grid = self.query_one("#leaderboard-table", DataTable)
        col = grid.cursor_coordinate.column
        keys = [MODEL_KEY, EPISODES_KEY, *(c.name for c in self.table.columns)]
        if 0 <= col < len(keys):
            self._sort_by(keys[col])

    def action_sort_name(self) -> None:
        self._sort_by(MODEL_KEY)

    def action_reload(self) -> None:
        self.reload()

    def action_toggle_all(self) -> None:
        self.rule = INCLUDE_ALL if self.rule is not INCLUDE_ALL else self.default_rule
        self.reload()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        if event.column_key.value is not None:
            self._sort_by(event.column_key.value)

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        """The cell under the cursor in full: status, coverage, bounds, reasons, method."""
        event.stop()
        self.query_one("#leaderboard-cell", Static).update(
            self.cell_detail(event.coordinate.row, event.coordinate.column)
        )

    def cell_detail(self, row: int, column: int) -> Text:
        if self.table is None or not 0 <= row < len(self._shown):
            return Text()
        model_row = self.table.row(self._shown[row])
        index = column - 2  # Model, Ep., then the metric columns
        if not 0 <= index < len(self.table.columns):
            suites = ", ".join(model_row.suites)
            return Text.assemble(
                (model_row.model, "bold"),
                f" · {model_row.n_episodes} episodes · suite {suites}",
                ("  (Enter: its episodes)", "dim"),
            )
        col = self.table.columns[index]
        cell = model_row.cells[col.name]
        text = Text.assemble((model_row.model, "bold"), " · ", (col.label, "bold"), ": ")
        text.append_text(cell_renderable(cell))
        text.append(f"  {cell.status}", style="dim")
        text.append(f" · {cell.measured}/{cell.applicable} episodes measured", style="dim")
        if cell.n_not_applicable:
            text.append(f" ({cell.n_not_applicable} not applicable)", style="dim")
        if cell.method:
            text.append(f" · {cell.method}", style="dim")
        if cell.reasons:
            text.append(" · " + "; ".join(cell.reasons), style="yellow")
        return text

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        event.stop()
        self._open(event.coordinate.row)

    def _open(self, row: int) -> None:
        if self.table is None or not 0 <= row < len(self._shown):
            return
        self.app.push_screen(ModelEpisodesScreen(self.table, self._shown[row]))

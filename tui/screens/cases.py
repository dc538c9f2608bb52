"""The case-set view: a benchmark run's progress, set by set, and each column's running band.

For each case run shown (the live command's, or every ``cases.json`` in the results folders
given to ``streameval dashboard``): one summary line (cases ended / left, time per case, the
estimated time left, the case running now), a table of the sets (done, incomplete, left and the
running mean of every column) and one line per column over the whole case set — its running
value and its anytime-valid band, the table's (``tui.cases``), and with ``--stop-when`` the
rule's state of the column: "direction_accuracy_trans 97.1 [95.4, 98.2] after 41 of 125:
decided better".

The screen owns no data: ``progress`` returns what to show, and the App calls ``changed``
when a case ended. Viewing a folder on disk, the screen reads it again every
``reload_interval_s`` (a run writing into it is followed) and on ``r``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from streameval.tui.cases import CaseProgress
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from streameval.leaderboard.columns import column_by_name, table_columns

ProgressSource = Callable[[], Sequence[tuple[str, CaseProgress]]]
"""The case runs to show: ``(title, progress)`` each."""

NO_CASE_RUN = "no case run here: run with --cases, or open a results folder holding cases.json"
BAND_NOTE = (
    "band: {confidence:.0%} anytime-valid interval on the column's value over the full case "
    "set, as `streameval table --ci` computes it (valid however often the run is looked at)"
)
STATE_STYLES = {"open": "yellow", "width met": "bold green"}


def short_label(column: str) -> str:
    """The table's short header of ``column`` (the name itself when unknown)."""
    try:
        return column_by_name(column, table_columns(every_suite=True)).short
    except KeyError:
        return column


def summary_text(title: str, progress: CaseProgress) -> Text:
    text = Text()
    text.append(f"{title}  ", style="bold")
    text.append(progress.summary())
    if progress.running is not None:
        text.append(f" · running {progress.running}", style="cyan")
    return text


def bands_text(progress: CaseProgress) -> Text:
    text = Text()
    if not progress.bands:
        text.append("no column value yet", style="dim")
    width = max((len(band.name) for band in progress.bands), default=0)
    for i, band in enumerate(progress.bands):
        if i:
            text.append("\n")
        text.append(f"{band.name:<{width}} ")
        text.append(band.figures(), style="bold")
        if band.state is not None:
            text.append(": ")
            text.append(band.state, style=STATE_STYLES.get(band.state, "bold green"))
        if band.low == band.high:
            text.append("  final", style="bold green")
    if progress.rule is not None:
        text.append("\n" + progress.rule, style="bold yellow")
    if progress.stop is not None:
        text.append("\n" + progress.stop, style="bold yellow")
    text.append("\n" + BAND_NOTE.format(confidence=progress.confidence), style="dim")
    return text


def set_rows(progress: CaseProgress) -> tuple[list[str], list[list[str]]]:
    """The sets table: header and one row per set, the column means at the bands' decimals."""
    columns = [band.name for band in progress.bands]
    decimals = {band.name: band.decimals for band in progress.bands}
    header = ["set", "done", "incompl.", "left", *(short_label(c) for c in columns)]
    rows = [
        [
            s.name,
            str(s.done),
            str(s.incomplete),
            str(s.left),
            *(f"{s.means[c]:.{decimals[c]}f}" if c in s.means else "—" for c in columns),
        ]
        for s in progress.sets
    ]
    return header, rows


class CasesScreen(Screen[None]):
    """Case-set progress and column bands of every case run shown."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("r", "reload", "Reload")]

    def __init__(self, progress: ProgressSource, reload_interval_s: float | None = None) -> None:
        super().__init__(id="cases")
        self.progress = progress
        self.reload_interval_s = reload_interval_s
        self._shown: list[tuple[str, CaseProgress]] | None = None

    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="cases-body")
        yield Footer()

    def on_mount(self) -> None:
        self.repaint()
        if self.reload_interval_s:
            self.set_interval(self.reload_interval_s, self.repaint)

    def on_screen_resume(self) -> None:
        self.repaint()

    def changed(self) -> None:
        """A case ended: repaint now if shown (else when shown again)."""
        if self.is_mounted and self.is_current:
            self.repaint()

    def action_reload(self) -> None:
        self.repaint()

    def repaint(self) -> None:
        runs = list(self.progress())
        if runs == self._shown:
            return
        self._shown = runs
        body = self.query_one("#cases-body", VerticalScroll)
        body.remove_children()
        if not runs:
            body.mount(Static(NO_CASE_RUN, classes="cases-summary"))
            return
        for title, progress in runs:
            header, rows = set_rows(progress)
            table: DataTable[str] = DataTable(
                classes="cases-sets", cursor_type="row", zebra_stripes=True
            )
            table.add_columns(*header)
            table.add_rows(rows)
            table.border_title = "Sets"
            bands = Static(bands_text(progress), classes="cases-bands")
            bands.border_title = "Columns over the whole case set"
            body.mount(
                Static(summary_text(title, progress), classes="cases-summary"),
                table,
                bands,
            )

"""The master table as an HTML page (``table --html FILE``) and as the top of ``index.html``:
the table itself from ``leaderboard/formats/html_table.py``, with the report's bar charts
beside it and its page around it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING

from streameval.leaderboard import MasterTable
from streameval.leaderboard.columns import metric_scale
from streameval.leaderboard.formats.html_table import html_table
from streameval.leaderboard.sets import ALL_SETS
from streameval.report.html import page, png_img
from streameval.report.plots import index_figure

if TYPE_CHECKING:
    from streameval.leaderboard.beside import SplitComparison


def master_table_fragment(table: MasterTable, *, with_plot: bool = True) -> list[str]:
    """The table, its legend, the excluded models with reasons (``html_table``), and one bar
    chart per column."""
    out = html_table(table)
    shown = list(table.rows) or [e.row for e in table.excluded]
    if with_plot and shown:
        columns = [
            (c.short, [r.cells[c.name].value for r in shown], metric_scale(c.name)[0])
            for c in table.columns
            if any(r.cells[c.name].value is not None for r in shown)
        ]
        if columns:
            png = index_figure([r.model for r in shown], columns)
            out.append(png_img(png, "master table columns per model"))
    return out


def render_master_table(
    table: MasterTable,
    title: str = "streameval master table",
    sets: Mapping[str, MasterTable] | None = None,
    published: Sequence[SplitComparison] | None = None,
) -> str:
    """A self-contained page holding the master table. Results of benchmark cases (``sets``,
    ``leaderboard.sets.set_tables``) get a table per set first, then the table over all sets,
    as the published benchmarks lay theirs out and as the other formats of ``table`` do;
    ``published`` (``table --published``) adds the published rows beside the user's."""
    parts = [f"<h1>{escape(title)}</h1>"]
    if sets:
        for name, part in sets.items():
            parts += [f"<h2>{escape(name)}</h2>", *master_table_fragment(part, with_plot=False)]
        parts.append(f"<h2>{escape(ALL_SETS)}</h2>")
    parts += master_table_fragment(table)
    if published:  # table --published: the published rows beside yours, per split
        from streameval.report.published import published_fragment

        parts += published_fragment(published)
    return page(title, parts)

"""The master table as HTML: for ``table --html FILE`` and the top of ``index.html``.

The numbers, ranks and exclusions are the ``MasterTable``'s (``streameval.leaderboard``); this
module only draws them, as ``cli/table.py`` does for the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING

from streameval.leaderboard import MasterTable, cell_text
from streameval.leaderboard.columns import metric_scale
from streameval.leaderboard.sets import ALL_SETS
from streameval.report.html import page, png_img
from streameval.report.plots import index_figure

if TYPE_CHECKING:
    from streameval.leaderboard.beside import SplitComparison


def master_table_fragment(table: MasterTable, *, with_plot: bool = True) -> list[str]:
    """The table, its legend, the excluded models with reasons, and one bar chart per column."""
    head = "".join(f"<th title='{escape(c.label)}'>{escape(c.short)}</th>" for c in table.columns)
    rows = []
    for row in table.rows:
        cells = []
        for column in table.columns:
            cell = row.cells[column.name]
            css = cell.rank or (cell.status if cell.value is None else "")
            title = "; ".join(cell.reasons)
            cells.append(
                f"<td class='num {css}' title='{escape(title)}'>{escape(cell_text(cell))}</td>"
            )
        cells_html = "".join(cells)
        rows.append(
            f"<tr><td>{escape(row.model)}</td><td class='num'>{row.n_episodes}</td>"
            f"{cells_html}</tr>"
        )
    if not table.rows:
        rows.append(
            f"<tr><td colspan='{len(table.columns) + 2}'>(no model passes the exclusion "
            "rule; see below)</td></tr>"
        )
    out = [
        "<table><thead><tr><th>Model</th><th>Ep.</th>" + head + "</tr></thead>",
        "<tbody>" + "".join(rows) + "</tbody></table>",
        "<p class='note'>Columns: "
        + escape(", ".join(f"{c.short} = {c.label}" for c in table.columns))
        + ". Best green, second yellow, worst red (at least 3 models); (k/N) = measured "
        "episodes / episodes where the metric applies.</p>",
    ]
    if table.excluded:
        out.append("<p>Excluded:</p><ul>")
        out += [
            f"<li>{escape(e.model)} ({e.row.n_episodes} episodes): {escape('; '.join(e.reasons))}"
            "</li>"
            for e in table.excluded
        ]
        out.append("</ul>")
    out += [f"<p class='note'>note: {escape(n)}</p>" for n in table.notes]
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

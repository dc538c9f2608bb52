"""The master table as HTML (``streameval table --html FILE`` and the top of ``index.html``):
the table with each cell's reasons as its tooltip and its rank as its class, the legend, the
excluded models with reasons and the table's notes. The page around it and the bar charts are
the report's (``report/master.py``); the styles of the rank classes are in its page's CSS.
"""

from __future__ import annotations

from html import escape

from streameval.leaderboard import MasterTable, cell_text


def html_table(table: MasterTable) -> list[str]:
    """The table, its legend, the excluded models with reasons and the notes, as HTML
    fragments in page order."""
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
    return out

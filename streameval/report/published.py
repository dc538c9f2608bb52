"""A user's rows beside a published leaderboard (``leaderboard.beside``) as HTML: for
``table --html FILE --published ...`` and ``index.html`` of results that hold a published
benchmark's cases. Published rows are marked as such, with the conditions they were measured
under; the user's cells carry their interval and the ranks it allows among the published rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from streameval.leaderboard.beside import SplitComparison
from streameval.leaderboard.beside_formats import LEGEND, conditions_lines, heading
from streameval.leaderboard.rounding import format_value


def published_fragment(parts: Sequence[SplitComparison]) -> list[str]:
    """One table per split, published rows first, then the user's (bold)."""
    out: list[str] = []
    for part in parts:
        head = "".join(
            f"<th title='{escape(c.label)}'>{escape(c.short)}</th>" for c in part.columns
        )
        rows = []
        for row in part.published:
            cells = "".join(
                f"<td class='num'>{format_value(row.values.get(c.name))}</td>" for c in part.columns
            )
            rows.append(
                f"<tr class='published'><td>{escape(row.model)}</td><td>published</td>{cells}</tr>"
            )
        for user in part.users:
            cells_html = []
            for c in part.columns:
                cell = user.cells[c.name]
                if cell is None:
                    status = user.status[c.name]
                    text = "n/a" if status == "not_applicable" else "missing"
                else:
                    text = cell.text()
                cells_html.append(f"<td class='num'><b>{escape(text)}</b></td>")
            rows.append(
                f"<tr class='yours'><td><b>{escape(user.model)}</b></td><td>yours</td>"
                f"{''.join(cells_html)}</tr>"
            )
        out += [
            f"<h2>{escape(heading(part))}</h2>",
            *(f"<p class='note'>{escape(line)}</p>" for line in conditions_lines(part)),
            "<table><thead><tr><th>Model</th><th>Row</th>" + head + "</tr></thead>",
            "<tbody>" + "".join(rows) + "</tbody></table>",
            *(f"<p class='note'>note: {escape(n)}</p>" for n in part.notes),
        ]
    if parts:
        out.append(f"<p class='note'>{escape(LEGEND)}</p>")
    return out

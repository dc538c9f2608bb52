"""Master-table cells as styled text, the way ``streameval table`` colours them.

Numbers, statuses, coverage, bounds and ranks all come from ``streameval.leaderboard``; the colours
are the terminal table's (``streameval.leaderboard.rounding.RICH_STYLES``: best bold green,
second yellow, worst red), so the dashboard and the CLI never disagree on what is best.
"""

from __future__ import annotations

from rich.text import Text

from streameval.leaderboard import Cell, cell_text, format_bounds, format_coverage
from streameval.leaderboard.rounding import RICH_STYLES


def cell_renderable(cell: Cell, *, bounds: bool = True) -> Text:
    """``45.12``, ``45.12 (7/15)``, ``… [lo, hi]``; ``n/a``/``missing`` dim; rank coloured."""
    body = cell_text(cell, coverage=False, bounds=False)
    parts = [body]
    if cell.value is not None:
        cov = format_coverage(cell)
        if cov:
            parts.append(f"({cov})")
        bnd = format_bounds(cell) if bounds else None
        if bnd:
            parts.append(bnd)
    style = RICH_STYLES[cell.rank] if cell.rank else ("dim" if cell.value is None else "")
    return Text(" ".join(parts), style=style, justify="right")

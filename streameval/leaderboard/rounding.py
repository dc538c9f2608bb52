"""How a number is shown, named once below the cells that carry it: two decimals on
WorldMark's 0–100 columns, four on WorldAtlas's [0, 1] metrics
(docs/methods.md#scales-and-rounding), and the rank marks. ``display.py`` formats whole cells
with these; ``cells.py`` rounds with them (so neither imports the other both ways)."""

from __future__ import annotations

from typing import Literal

Rank = Literal["best", "second", "worst"]
# WorldMark's colours for each rank, for the views that draw them.
RANK_COLOURS: dict[Rank, str] = {"best": "green", "second": "yellow", "worst": "red"}


# How a rank is marked: Markdown (``table --markdown``) and Rich styles (terminal, dashboard)
MARKDOWN_MARKS: dict[Rank, str] = {"best": "🟢", "second": "🟡", "worst": "🔴"}
RICH_STYLES: dict[Rank, str] = {"best": "bold green", "second": "yellow", "worst": "red"}


def round_display(value: float, decimals: int = 2) -> float:
    """The value exactly as displayed with ``decimals`` decimals (``-0.00`` shown as ``0.00``)."""
    return float(f"{value:.{decimals}f}") + 0.0


def format_value(value: float | None, decimals: int = 2) -> str:
    """``decimals`` decimals (``-0.00`` shown as ``0.00``); ``""`` for None."""
    return "" if value is None else f"{round_display(value, decimals):.{decimals}f}"

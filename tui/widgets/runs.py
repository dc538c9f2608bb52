"""Build a line of single-character cells as few styled spans (one per run of equal style).

The plots and the schedule bar are drawn a cell at a time; appending each cell as its own span
makes Textual convert thousands of spans per repaint. Merging runs keeps a repaint cheap.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text


def text_from_cells(cells: Iterable[tuple[str, str]]) -> Text:
    """``cells``: (character, style) pairs, style "" for none."""
    text = Text()
    run: list[str] = []
    run_style: str | None = None
    for ch, style in cells:
        if style != run_style and run:
            text.append("".join(run), style=run_style or None)
            run = []
        run_style = style
        run.append(ch)
    if run:
        text.append("".join(run), style=run_style or None)
    return text

"""``streameval table RESULTS --published worldmark[:SPLIT]``: the published rows beside yours
(docs/cli.md#table).

The comparison is ``leaderboard.beside``'s; Markdown and CSV are ``leaderboard.beside_formats``,
HTML ``report.published``; this module draws it for the terminal and wires the option into
``table``. ``--published`` with no value lists the boards and splits this installation holds.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from streameval.errors import BadInputError
from streameval.leaderboard.beside import SplitComparison, compare_published
from streameval.leaderboard.beside_formats import LEGEND, conditions_lines, heading
from streameval.leaderboard.columns import Column
from streameval.leaderboard.published import describe_available, parse_published
from streameval.leaderboard.rounding import format_value
from streameval.results.scores_file import EpisodeRecord

LIST = "\0list"  # ``--published`` given without a value


def add_option(parser: Any) -> None:
    """Add ``--published [NAME[:SPLIT]]`` to ``table``'s parser."""
    parser.add_argument(
        "--published",
        nargs="?",
        const=LIST,
        default=None,
        metavar="NAME[:SPLIT]",
        help=(
            "show a published leaderboard's rows (marked published, with their conditions) "
            "beside yours, per split, with the ranks your values or intervals can take "
            "(e.g. worldmark, worldmark:first_view/real); alone: list what is available"
        ),
    )


def listing() -> str:
    return "\n".join(describe_available()) + "\n"


def comparisons(
    spec: str, episodes: Sequence[EpisodeRecord], paths: Sequence[Path], **options: Any
) -> list[SplitComparison]:
    """Parse ``spec`` and compare; ``BadInputError`` (one line) for an unknown board or
    split."""
    board, split = parse_published(spec)
    return compare_published(board, split, episodes, paths, **options)


def check_spec(spec: str) -> str | None:
    """The one-line error for a bad ``--published`` value, else None."""
    try:
        parse_published(spec)
    except BadInputError as exc:
        return str(exc)
    return None


def _grid(part: SplitComparison, columns: Sequence[Column], title: str) -> Any:
    """The rich table of ``columns`` (Model and Row first) for one split."""
    from rich.table import Table
    from rich.text import Text

    grid = Table(title=title)
    grid.add_column("Model", no_wrap=True)
    grid.add_column("Row")
    for column in columns:
        grid.add_column(column.short, justify="right", min_width=6)
    for row in part.published:
        values = [Text(format_value(row.values.get(c.name))) for c in columns]
        grid.add_row(Text(row.model), Text("published", style="dim"), *values)
    for user in part.users:
        texts = []
        for c in columns:
            cell = user.cells[c.name]
            if cell is None:
                status = user.status[c.name]
                texts.append(Text("n/a" if status == "not_applicable" else "missing"))
                continue
            lines = [format_value(cell.value)]
            if cell.cases is not None and cell.low != cell.high:
                lines.append(f"[{format_value(cell.low)}, {format_value(cell.high)}]")
                lines.append(f"{cell.cases}/{cell.of_cases} cases")
            lines.append(cell.rank_text)
            texts.append(Text("\n".join(lines), style="bold"))
        grid.add_row(Text(user.model, style="bold"), Text("yours"), *texts)
    return grid


def render_rich(parts: Sequence[SplitComparison], file: TextIO = sys.stdout) -> None:
    """One terminal table per split: the published rows (dim, marked published), then yours
    (bold) with the interval and the rank range under each value. A terminal too narrow for
    every column gets them in stacked tables, as ``table`` does; piped output without
    ``COLUMNS`` is printed at its natural width."""
    import os

    from rich.console import Console
    from rich.text import Text

    console = Console(file=file)
    wide = not console.is_terminal and "COLUMNS" not in os.environ

    def measure(grid: Any) -> int:
        options = console.options.update(max_width=10_000)
        return int(console.measure(grid, options=options).maximum)

    for part in parts:
        title = heading(part)
        if wide:
            console = Console(file=file, width=max(80, measure(_grid(part, part.columns, title))))
        chunks: list[list[Column]] = []
        for column in part.columns:
            if chunks and measure(_grid(part, [*chunks[-1], column], title)) <= console.width:
                chunks[-1].append(column)
            else:
                chunks.append([column])
        for i, columns in enumerate(chunks):
            numbered = f"{title} ({i + 1}/{len(chunks)})" if len(chunks) > 1 else title
            console.print(_grid(part, columns, numbered))
        for line in conditions_lines(part):
            console.print(Text(line), style="dim")
        for note in part.notes:
            console.print(Text(f"note: {note}"))
    console.print(Text(LEGEND), style="italic")


def with_json(text: str, parts: Sequence[SplitComparison]) -> str:
    """``table --json``'s document with a ``published`` key: the board's source and
    conditions and, per split, its published rows and yours with their rank ranges."""
    import json

    from streameval.leaderboard.beside import comparison_json

    doc = json.loads(text)
    if parts:
        doc["published"] = comparison_json(parts[0].board, parts)
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"

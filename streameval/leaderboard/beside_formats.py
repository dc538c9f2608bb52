"""A user's rows beside a published table (``leaderboard.beside``) as Markdown and CSV.

The numbers are the comparison's; these only lay them out. Every published row is marked
``published`` and every user row ``yours``, and each split's heading carries the published
conditions (offline, how many videos, the reference's backends), so a reader never takes the
two kinds of row for the same measurement.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from streameval.leaderboard.beside import SplitComparison
from streameval.leaderboard.rounding import format_value

LEGEND = (
    "published = the benchmark's own rows, as published (conditions above); yours = your "
    "results: value, [low, high] the 95% anytime-valid interval on the split's full value "
    "after n/N cases (a case run), and #a–b of M the ranks that value or interval can take "
    "among the published rows"
)


def heading(part: SplitComparison) -> str:
    """``WorldMark leaderboard · first_view/real (First-Person · Real)``."""
    return f"{part.board.title} · {part.split} ({part.label})"


def conditions_lines(part: SplitComparison) -> list[str]:
    board = part.board
    return [f"published: {board.conditions_text}", f"source: {board.source_text}"]


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def comparison_markdown(parts: Sequence[SplitComparison]) -> str:
    """One Markdown table per split: published rows, then the user's, then the notes."""
    out: list[str] = []
    for part in parts:
        header = ["Model", "Row", *(c.label for c in part.columns)]
        out += [f"### {_md(heading(part))}", ""]
        out += [f"- {_md(line)}" for line in conditions_lines(part)]
        out += [
            "",
            "| " + " | ".join(header) + " |",
            "|" + "|".join([" --- ", " --- "] + [" ---: "] * len(part.columns)) + "|",
        ]
        for row in part.published:
            values = [format_value(row.values.get(c.name)) for c in part.columns]
            out.append("| " + " | ".join([_md(row.model), "published", *values]) + " |")
        for user in part.users:
            texts = []
            for c in part.columns:
                cell = user.cells[c.name]
                texts.append(_md(cell.text()) if cell is not None else _status(user.status[c.name]))
            out.append("| " + " | ".join([f"**{_md(user.model)}**", "yours", *texts]) + " |")
        if not part.users:
            out.append("| (none of yours) | yours |" + " |" * len(part.columns))
        out += ["", LEGEND]
        out += [f"\nnote: {_md(n)}" for n in part.notes]
        out.append("")
    return "\n".join(out) + "\n"


def _status(status: str) -> str:
    return "n/a" if status == "not_applicable" else "missing"


def comparison_csv(parts: Sequence[SplitComparison]) -> str:
    """One CSV row per published and user row of each split: ``split``, ``row``
    (published / yours), ``model``, ``episodes`` and ``placed`` (yours: ``split``, ``asked``
    or ``unsplit``, ``beside.Placed``), ``conditions`` (published: how they were measured),
    and per column the value and, for the
    user's rows, ``_low``, ``_high``, ``_cases``, ``_of_cases``, ``_rank_best``,
    ``_rank_worst``, ``_of``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if not parts:
        return ""
    names = [c.name for c in parts[0].columns]
    extra = ("low", "high", "cases", "of_cases", "rank_best", "rank_worst", "of")
    header = ["split", "row", "model", "episodes", "placed", "conditions"]
    for name in names:
        header += [name, *(f"{name}_{e}" for e in extra)]
    writer.writerow(header)
    for part in parts:
        conditions = part.board.conditions_text
        for row in part.published:
            line: list[object] = [part.split, "published", row.model, "", "", conditions]
            for name in names:
                value = row.values.get(name)
                line += ["" if value is None else f"{value:.2f}", *[""] * len(extra)]
            writer.writerow(line)
        for user in part.users:
            line = [part.split, "yours", user.model, user.episodes, user.placed, ""]
            for name in names:
                cell = user.cells.get(name)
                if cell is None:
                    line += [user.status.get(name, "missing"), *[""] * len(extra)]
                    continue
                line += [
                    f"{cell.value:.6f}",
                    f"{cell.low:.6f}",
                    f"{cell.high:.6f}",
                    "" if cell.cases is None else cell.cases,
                    "" if cell.of_cases is None else cell.of_cases,
                    cell.best,
                    cell.worst,
                    cell.of,
                ]
            writer.writerow(line)
    return buffer.getvalue()

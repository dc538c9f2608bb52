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
from pathlib import Path

from streameval.leaderboard.beside import SplitComparison
from streameval.leaderboard.rounding import format_value
from streameval.results.scores_file import EpisodeRecord

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


def summary_lines(parts: Sequence[SplitComparison]) -> list[str]:
    """One line per split and user row placed there, its rank range per column with a value:
    ``WorldMark first_view/real (published: offline, 125 videos): my-model  Acc T #2–4 of 11,
    Pur T #1 of 11, ...`` (the dashboard's leaderboard notes)."""
    lines = []
    for part in parts:
        videos = part.board.conditions.get("videos_per_model")
        mode = part.board.conditions.get("mode", "")
        where = f"{part.board.title} {part.split} (published: {mode}, {videos} videos)"
        for user in part.users:
            ranks = [
                f"{c.short} {cell.rank_text}"
                for c in part.columns
                if (cell := user.cells.get(c.name)) is not None
            ]
            if ranks:
                lines.append(f"{where}: {user.model}  {', '.join(ranks)}")
    return lines


def published_splits(
    episodes: Sequence[EpisodeRecord], paths: Sequence[Path], board: str = "worldmark"
) -> list[SplitComparison]:
    """The comparison of every split of ``board`` the episodes hold cases of (nothing for
    results of no such case), each model under its own split, every model ranked."""
    from streameval.leaderboard.beside import compare_published
    from streameval.leaderboard.published import load_board
    from streameval.leaderboard.table import INCLUDE_ALL

    found = load_board(board)
    splits = sorted({r.case_set for r in episodes if r.case_set is not None} & set(found.splits))
    parts: list[SplitComparison] = []
    for split in splits:
        ran = [r for r in episodes if r.case_set == split]
        parts += compare_published(found, split, ran, paths, rule=INCLUDE_ALL)
    return parts

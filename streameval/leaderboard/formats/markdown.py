"""The master table as Markdown (``streameval table --markdown``): for a README, an issue or a
chat. Markdown has no colour, so each ranked value carries an emoji in front — 🟢 best, 🟡
second, 🔴 worst — and a legend line says so; emoji survive GitHub, GitLab and chat renderers,
where bold/italic would be easy to miss. Partial cells show ``value (k/N) [lower, upper]``;
cells without a value show ``n/a`` or ``missing``; excluded models are listed with reasons.
"""

from __future__ import annotations

from streameval.leaderboard import Cell, MasterTable, cell_text
from streameval.leaderboard.diagnostics import Diagnostics
from streameval.leaderboard.formats.legend import CI_LEGEND, DIAG_NOTE, LEGEND, has_intervals
from streameval.leaderboard.rounding import MARKDOWN_MARKS


def md_escape(text: str) -> str:
    """Cell text safe inside a Markdown table row."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown_cell(cell: Cell) -> str:
    """``🟢 45.12`` for a ranked cell, the plain ``cell_text`` otherwise."""
    text = cell_text(cell)
    return f"{MARKDOWN_MARKS[cell.rank]} {text}" if cell.rank else text


def render_markdown(table: MasterTable, *, legend: bool = True) -> str:
    """The whole table as Markdown: header, one row per included model, legend (unless
    ``legend`` is False: a benchmark set's table above the one over all sets), exclusions."""
    header = ["Model", "Episodes", *(c.label for c in table.columns)]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join([" --- ", " ---: "] + [" ---: "] * len(table.columns)) + "|",
    ]
    for row in table.rows:
        cells = [markdown_cell(row.cells[c.name]) for c in table.columns]
        lines.append("| " + " | ".join([md_escape(row.model), str(row.n_episodes), *cells]) + " |")
    if not table.rows:
        lines.append("| " + " | ".join(["(no model)", *[""] * (len(header) - 1)]) + " |")
    if legend:
        lines += ["", LEGEND.format(**MARKDOWN_MARKS)]
        lines += [CI_LEGEND] if has_intervals(table) else []
    if table.excluded:
        lines += ["", "Excluded:"]
        lines += [
            f"- {md_escape(e.model)} ({e.row.n_episodes} episodes): {'; '.join(e.reasons)}"
            for e in table.excluded
        ]
    return "\n".join(lines) + "\n"


def render_diagnostics_markdown(diag: Diagnostics) -> str:
    """The diagnostics as a second Markdown table (nothing when no episode reported one)."""
    if not diag.metrics:
        return "\nDiagnostics: none reported by these episodes.\n"
    header = ["Model", *(s.label for s in diag.metrics)]
    lines = [
        "",
        "Diagnostics:",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join([" --- "] + [" ---: "] * len(diag.metrics)) + "|",
    ]
    for model, cells in diag.rows:
        texts = [md_escape(cells[s.name].text()) for s in diag.metrics]
        lines.append("| " + " | ".join([md_escape(model), *texts]) + " |")
    lines += ["", DIAG_NOTE]
    return "\n".join(lines) + "\n"

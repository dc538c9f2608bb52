"""``index.html`` of a results folder: every model (none excluded, so nothing is hidden; the
default rule's verdict is listed), the per-column bar charts, and every episode with its
status and a link to its ``report.html``."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path

from streameval.core.atomic import write_text_atomic
from streameval.errors import BadInputError
from streameval.leaderboard import INCLUDE_ALL, ExclusionRule, build_table, load_results
from streameval.leaderboard.intervals import find_case_runs, with_intervals
from streameval.report.bands import run_bands_fragment
from streameval.report.episode import REPORT_NAME
from streameval.report.evidence import evidence_fragment
from streameval.report.headline import run_headline
from streameval.report.html import page
from streameval.report.master import master_table_fragment
from streameval.results.scores_file import EpisodeRecord

INDEX_NAME = "index.html"


def render_index(root: Path) -> str:
    loaded = load_results([root])
    table = build_table(loaded.episodes, rule=INCLUDE_ALL)
    default = build_table(loaded.episodes, rule=ExclusionRule())
    runs = find_case_runs([root])  # case runs: each cell with its interval, and the bands
    if runs:
        table = with_intervals(table, runs)
    served = [dict(r.runtime) for r in loaded.episodes if r.runtime]
    ok = sum(1 for r in loaded.episodes if r.complete)
    body = [
        f"<h1>streameval results: {escape(str(root))}</h1>",
        *run_headline(served, ok, len(loaded.episodes)),
        *master_table_fragment(table),
    ]
    body += evidence_fragment(root)
    body += _published_beside(loaded.episodes, root)
    for model, model_dir in sorted(runs.items()):
        body += run_bands_fragment(model, model_dir)
    if default.excluded:
        body.append(
            "<p class='note'>The default rule of <code>streameval table</code> would leave out: "
            + escape("; ".join(f"{e.model} ({', '.join(e.reasons)})" for e in default.excluded))
            + ". This page shows every model.</p>"
        )
    rows = []
    for record in sorted(loaded.episodes, key=lambda r: (r.model, r.case_set or "", r.episode)):
        report = record.results_dir / REPORT_NAME
        link = (
            f"<a href='{escape(report.relative_to(root).as_posix())}'>report</a>"
            if report.is_file()
            else "(no report)"
        )
        state = "complete" if record.complete else "incomplete"
        rows.append(
            f"<tr><td>{escape(record.model)}</td><td>{escape(episode_label(record))}</td>"
            f"<td>{state}</td><td>{link}</td></tr>"
        )
    body += [
        "<h2>Episodes</h2>",
        "<table><thead><tr><th>model</th><th>episode</th><th>state</th><th></th></tr></thead>",
        "<tbody>" + "".join(rows) + "</tbody></table>",
    ]
    if loaded.errors:
        body += ["<h2>Unreadable</h2><ul>"]
        body += [f"<li>{escape(str(e))}</li>" for e in loaded.errors]
        body += ["</ul>"]
    return page(f"streameval results: {root}", body)


def _published_beside(episodes: Sequence[EpisodeRecord], root: Path) -> list[str]:
    """WorldMark's published rows beside the results' own, for each of its splits the results
    hold cases of (as ``table --published worldmark``); nothing for other results."""
    from streameval.leaderboard.beside_formats import published_splits
    from streameval.report.published import published_fragment

    return published_fragment(published_splits(episodes, [root]))


def write_index(root: Path) -> Path:
    """Write ``root/index.html``; ``BadInputError`` when ``root`` holds no scores.json."""
    if not root.is_dir():
        raise BadInputError(root, "no such results directory")
    path = root / INDEX_NAME
    write_text_atomic(path, render_index(root))
    return path


def episode_label(record: EpisodeRecord) -> str:
    """The episode's name, with its set for a benchmark case (``first_view/real/000_006``)."""
    return f"{record.case_set}/{record.episode}" if record.case_set else record.episode

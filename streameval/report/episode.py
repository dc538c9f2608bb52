"""``report.html`` of one episode: the score table with statuses, the motion signals per
segment, Local Memory's sampled frames, Revisit pairs, interactivity and provenance."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from streameval.report.data import EpisodeData, load_episode_data, read_thumbnails
from streameval.report.html import number, page, png_img, table
from streameval.report.plots import (
    frames_wanted,
    local_memory_figure,
    revisit_figure,
    signals_figure,
)

REPORT_NAME = "report.html"


def _score_rows(data: EpisodeData) -> list[list[str]]:
    rows = []
    for name, m in data.scores.get("metrics", {}).items():
        status = str(m.get("status"))
        value = number(m.get("normalized")) if status == "official" else ""
        rows.append(
            [
                escape(name),
                f'<span class="{escape(status)}">{escape(status)}</span>',
                f'<span class="num">{value}</span>',
                escape(str(m.get("reason") or "")),
            ]
        )
    return rows


def _section(title: str, png: bytes | None, alt: str, missing: str) -> list[str]:
    body = png_img(png, alt) if png is not None else f'<p class="note">{escape(missing)}</p>'
    return [f"<h2>{escape(title)}</h2>", body]


def render_episode(data: EpisodeData) -> str:
    """The report page of ``data`` as HTML text."""
    s = data.scores
    title = f"{s.get('model')} — {s.get('episode')}"
    thumbs = read_thumbnails(data.video, frames_wanted(data))
    no_video = "no recording beside the results: thumbnails need recording/ (--record)"
    state = "complete" if s.get("complete", True) else "INCOMPLETE"
    interactivity: dict[str, Any] = s.get("interactivity") or {}
    body = [
        f"<h1>{escape(title)}</h1>",
        f"<p>suite {escape(str(s.get('suite')))} · {s.get('frames')} frames at "
        f"{number(s.get('fps'), 1)} fps · {state}</p>",
        "<h2>Scores</h2>",
        table(["metric", "status", "value (0–100)", "reason"], _score_rows(data), raw=True),
        *_section(
            "Motion signals",
            signals_figure(data),
            "Sx and Srad over time with segments",
            "no cache/signals.npz: signal plots unavailable",
        ),
        *_section(
            "Local Memory",
            local_memory_figure(data, thumbs),
            "Local Memory sampled frames and pair distances",
            "no sampled pairs (see the score table for why)",
        ),
        *_section(
            "Revisit Memory",
            revisit_figure(data, thumbs),
            "Revisit pairs",
            f"no revisit pair to show ({data.metric('revisit_memory').get('reason') or ''}"
            f"{'' if thumbs else '; ' + no_video})",
        ),
        "<h2>Interactivity</h2>",
        table(
            ["measure", "value"],
            [[k, number(v)] for k, v in interactivity.items()],
        ),
        "<h2>Provenance</h2>",
        f"<pre>{escape(json.dumps(s.get('provenance', {}), indent=2))}</pre>",
    ]
    if s.get("errors"):
        body += ["<h2>Errors</h2>", "<ul>"]
        body += [f"<li>{escape(str(e))}</li>" for e in s["errors"]]
        body += ["</ul>"]
    return page(title, body)


def write_episode_report(results_dir: Path) -> Path:
    """Write ``results_dir/report.html``; raises ``BadInputError`` if scores.json is unreadable."""
    html = render_episode(load_episode_data(results_dir))
    path = results_dir / REPORT_NAME
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(path)
    return path

"""``report.html`` of one episode: the score table with statuses, the motion signals per
segment, Local Memory's sampled frames, Revisit pairs, interactivity, the real-time metrics and
provenance."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from streameval.core.atomic import write_text_atomic
from streameval.report.bands import CaseRunBands
from streameval.report.data import EpisodeData, load_episode_data, read_thumbnails
from streameval.report.headline import episode_headline
from streameval.report.html import number, page, png_img, table
from streameval.report.plots import (
    frames_wanted,
    local_memory_figure,
    revisit_figure,
    signals_figure,
)
from streameval.results.episode_state import REPORT_FILE

REPORT_NAME = REPORT_FILE  # named once, beside what clearing an episode folder removes


def _score_rows(data: EpisodeData) -> list[list[str]]:
    rows = []
    for name, m in data.scores.get("metrics", {}).items():
        status = str(m.get("status"))
        official = status == "official"
        value = number(m.get("normalized")) if official else ""
        # statistics in their own units (imaging, drift) have a raw value and no 0–100 one
        raw_value = m.get("raw")
        raw = f"{raw_value:.4g}" if official and isinstance(raw_value, int | float) else ""
        rows.append(
            [
                escape(name),
                f'<span class="{escape(status)}">{escape(status)}</span>',
                f'<span class="num">{value}</span>',
                f'<span class="num">{raw}</span>',
                escape(str(m.get("reason") or "")),
            ]
        )
    return rows


def _interactivity_rows(block: dict[str, Any]) -> list[list[str]]:
    """The registered figures first (label and unit from the registry, family
    ``interactivity``), then whatever else the block holds (clock, transport counters) by
    its key: an older or newer file shows everything it has."""
    from streameval.metrics.interactivity import format_figure, registered_figures

    rows: list[list[str]] = []
    shown: set[str] = set()
    for spec, value in registered_figures(block):
        figure = format_figure(spec, value).removesuffix(f" {spec.unit}")
        rows.append([escape(spec.label), f'<span class="num">{escape(figure)}</span>', spec.unit])
        shown.add(spec.name)
    for key, value in block.items():
        if key not in shown:
            rows.append([escape(key), escape(number(value)), ""])
    return rows


def _capture_note(interactivity: dict[str, Any]) -> list[str]:
    """A web page's world (``browser+``): its frames are what the browser showed, captured
    (JPEG), so the real-time figures time the page through Chromium, not the model's own
    frames; said above them, in words."""
    capture = interactivity.get("capture")
    if not isinstance(capture, str):
        return []
    return [
        f"<p><b>Frames came through a browser capture ({escape(capture)}):</b> the real-time "
        "figures time what Chromium showed of the page (JPEG pictures of its element), not "
        "the model's own frames.</p>"
    ]


def _realtime_rows(metrics: dict[str, Any]) -> list[list[str]]:
    """WorldAtlas's real-time metrics (docs/methods.md#real-time-metrics): the value on [0, 1]
    with 4 decimals, the raw figure in its own units (seconds, frames, chunks), or the status
    and its reason; nothing when the file predates them."""
    from streameval.metrics.registry import metric_spec
    from streameval.metrics.worldatlas.realtime_scores import REALTIME_METRICS, raw_summary

    rows: list[list[str]] = []
    for name in REALTIME_METRICS:
        m = metrics.get(name)
        if not isinstance(m, dict):
            continue
        spec = metric_spec(name)
        status = str(m.get("status"))
        raw, value = m.get("raw"), m.get("normalized")
        details = m.get("details")
        figure = ""
        if status == "official" and isinstance(raw, int | float):
            figure = raw_summary(name, float(raw), details if isinstance(details, dict) else {})
        rows.append(
            [
                escape(spec.label),
                f'<span class="{escape(status)}">{escape(status)}</span>',
                f'<span class="num">{number(value, spec.decimals) if figure else ""}</span>',
                escape(figure),
                escape(str(m.get("reason") or "")),
            ]
        )
    return rows


def _section(title: str, png: bytes | None, alt: str, missing: str) -> list[str]:
    body = png_img(png, alt) if png is not None else f'<p class="note">{escape(missing)}</p>'
    return [f"<h2>{escape(title)}</h2>", body]


def render_episode(data: EpisodeData, extra: Sequence[str] = ()) -> str:
    """The report page of ``data`` as HTML text; ``extra``: more sections (HTML) after the
    scores (a case run's intervals, ``report.bands``)."""
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
        *episode_headline(s.get("runtime")),
        "<h2>Scores</h2>",
        table(
            ["metric", "status", "value (0–100)", "raw (own unit)", "reason"],
            _score_rows(data),
            raw=True,
        ),
        *extra,
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
        table(["measure", "value", "unit"], _interactivity_rows(interactivity), raw=True),
        "<h2>Real time (WorldAtlas)</h2>",
        *_capture_note(interactivity),
        table(
            ["metric", "status", "value [0, 1]", "raw (own units)", "reason"],
            _realtime_rows(s.get("metrics") or {}),
            raw=True,
        ),
        "<h2>Provenance</h2>",
        f"<pre>{escape(json.dumps(s.get('provenance', {}), indent=2))}</pre>",
    ]
    if s.get("errors"):
        body += ["<h2>Errors</h2>", "<ul>"]
        body += [f"<li>{escape(str(e))}</li>" for e in s["errors"]]
        body += ["</ul>"]
    return page(title, body)


def write_episode_report(results_dir: Path, bands: CaseRunBands | None = None) -> Path:
    """Write ``results_dir/report.html``; raises ``BadInputError`` if scores.json is unreadable.
    ``bands``: the case runs' intervals, shared by the reports of one run's cases."""
    data = load_episode_data(results_dir)
    extra: list[str] = []
    case = data.scores.get("case")
    if isinstance(case, dict) and case.get("name"):
        key = f"{case.get('set')}/{case['name']}" if case.get("set") else str(case["name"])
        extra = (bands or CaseRunBands()).fragment(results_dir, key)
    html = render_episode(data, extra)
    path = results_dir / REPORT_NAME
    write_text_atomic(path, html)
    return path

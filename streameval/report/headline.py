"""The first screen of a report: "is it real-time, and how responsive?" at a glance, before the
per-metric table (docs/methods.md#runtime). Read from ``scores.json``'s ``runtime`` blocks:
native fps (median window, worst window), the real-time verdict, time to first frame, key
response p50/p95, the frames counted by class, and how many cases ran to their end.

Nothing is shown for results without a runtime block (in-process runs, replays of rollouts,
files written before it): the pages are then as they were."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from streameval.report.html import number

VERDICT_STYLE = {
    "pass": "background:#d7f5dd;color:#1a7f37",
    "fail": "background:#ffd9d6;color:#cf222e",
    "too short": "background:#eee;color:#555",
}
VERDICT_WORDS = {
    "pass": "real-time",
    "fail": "not real-time",
    "too short": "not long enough to judge real time",
}
BOX = "display:inline-block;margin:0 1.2em 0.6em 0;vertical-align:top"


def _figure(label: str, value: str) -> str:
    return (
        f"<div style='{BOX}'><div style='font-size:1.5em;font-weight:600'>{value}</div>"
        f"<div class='note'>{escape(label)}</div></div>"
    )


def _seconds(value: object) -> str:
    return f"{number(value, 2)} s" if isinstance(value, int | float) else "—"


def _verdict(verdict: str, target: object, window: object) -> str:
    style = VERDICT_STYLE.get(verdict, "")
    words = VERDICT_WORDS.get(verdict, verdict)
    return (
        f"<p style='font-size:1.2em;padding:0.4em 0.8em;{style}'><b>{escape(words)}</b>"
        f" <span class='note'>(LiveFrame's rule: every {number(window, 0)} s window of a "
        f"continuous stream of at least 60 s at ≥ {number(target, 1)} native fps, no stall)"
        "</span></p>"
    )


def episode_headline(runtime: Mapping[str, Any] | None) -> list[str]:
    """The episode report's first screen (empty without a runtime block)."""
    if not runtime:
        return []
    r = runtime
    counts = (
        f"{r.get('native_frames')} native · {r.get('repeat_frames')} repeated · "
        f"{r.get('interpolated_frames')} interpolated"
    )
    out = [
        "<h2>Is it real-time, and how responsive?</h2>",
        _verdict(str(r.get("realtime")), r.get("realtime_target_fps"), r.get("window_s")),
        "<div>",
        _figure("native fps, median window", number(r.get("native_fps_median"), 1)),
        _figure("native fps, worst window", number(r.get("worst_window_fps"), 1)),
        _figure("time to first frame", _seconds(r.get("time_to_first_frame_s"))),
        _figure("key → response p50", _seconds(r.get("key_response_p50_s"))),
        _figure("key → response p95", _seconds(r.get("key_response_p95_s"))),
        _figure("stalls", str(r.get("stalls", "—"))),
        "</div>",
        f"<p class='note'>Frames received: {escape(counts)} (only native frames count). "
        f"Cold start {_seconds(r.get('cold_start_s'))}, apart from generation. Stream "
        f"{_seconds(r.get('stream_seconds'))}.</p>",
    ]
    if r.get("warning"):
        out.append(f"<p class='missing'><b>Warning:</b> {escape(str(r['warning']))}</p>")
    return out


def _median(values: Sequence[float]) -> float | None:
    v = sorted(values)
    return v[len(v) // 2] if v else None


def _numbers(blocks: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    return [
        float(b[key])
        for b in blocks
        if isinstance(b.get(key), int | float) and not isinstance(b.get(key), bool)
    ]


def run_verdict(blocks: Sequence[Mapping[str, Any]]) -> str:
    """A run's verdict: ``fail`` when any judged stream failed, ``pass`` when every judged
    stream passed, ``too short`` when none was long enough."""
    verdicts = {str(b.get("realtime")) for b in blocks}
    if "fail" in verdicts:
        return "fail"
    return "pass" if "pass" in verdicts else "too short"


def run_headline(blocks: Sequence[Mapping[str, Any]], cases_ok: int, cases: int) -> list[str]:
    """index.html's first screen over a run's episodes: the medians of their native fps and
    time to first frame, the worst window of all, the median key p50 and the worst key p95,
    how many ran to their end (empty when no episode has a runtime block)."""
    if not blocks:
        return []
    target = _median(_numbers(blocks, "realtime_target_fps"))
    worst = _numbers(blocks, "worst_window_fps")
    p95 = _numbers(blocks, "key_response_p95_s")
    ttff = _numbers(blocks, "time_to_first_frame_s")
    native = sum(int(b.get("native_frames") or 0) for b in blocks)
    received = sum(int(b.get("received_frames") or 0) for b in blocks)
    out = [
        "<h2>Is it real-time, and how responsive?</h2>",
        _verdict(run_verdict(blocks), target, _median(_numbers(blocks, "window_s"))),
        "<div>",
        _figure("native fps, median", number(_median(_numbers(blocks, "native_fps_median")), 1)),
        _figure("native fps, worst window", number(min(worst) if worst else None, 1)),
        _figure(
            "time to first frame, median",
            _seconds(_median(ttff)),
        ),
        _figure("key → response p50", _seconds(_median(_numbers(blocks, "key_response_p50_s")))),
        _figure("key → response p95, worst", _seconds(max(p95) if p95 else None)),
        _figure("cases ok", f"{cases_ok}/{cases}"),
        "</div>",
        f"<p class='note'>{native} of {received} frames received were native "
        f"(over {len(blocks)} served stream(s)).</p>",
    ]
    warned = [str(b["warning"]) for b in blocks if b.get("warning")]
    if warned:
        out.append(f"<p class='missing'><b>Warning:</b> {escape(warned[0])}</p>")
    return out

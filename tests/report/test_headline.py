"""The report's first screen (``report/headline.py``): is it real-time, and how responsive —
the verdict, native fps median and worst window, time to first frame, key response p50/p95,
the frames by class and the cases that ran to their end, before the per-metric table; nothing
for results without a runtime block."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from streameval.report.headline import episode_headline, run_headline, run_verdict
from streameval.report.index import render_index
from tests.tui.sample import write_sample_results


def _runtime(verdict: str, worst: float, **more: Any) -> dict[str, Any]:
    return {
        "native_frames": 960, "repeat_frames": 960, "interpolated_frames": 0,
        "received_frames": 1920, "native_fps": 16.0, "native_fps_median": 16.0,
        "worst_window_fps": worst, "window_s": 10.0, "realtime": verdict,
        "realtime_target_fps": 16.0, "time_to_first_frame_s": 0.25, "cold_start_s": 3.5,
        "key_response_p50_s": 0.4, "key_response_p95_s": 0.9, "stalls": 0,
        "stream_seconds": 60.5, "warning": "50% of the frames received were not generated",
        **more,
    }  # fmt: skip


def _text(html: list[str]) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", "".join(html)))


def test_an_episode_headline_answers_at_a_glance() -> None:
    text = _text(episode_headline(_runtime("pass", 15.9)))
    assert "real-time" in text and "not real-time" not in text
    for shown in ("16.0 native fps, median window", "15.9 native fps, worst window",
                  "0.25 s time to first frame", "0.40 s key → response p50",
                  "0.90 s key → response p95", "960 native · 960 repeated · 0 interpolated",
                  "Cold start 3.50 s", "Warning: 50%"):  # fmt: skip
        assert shown in text, shown
    assert "not long enough to judge" in _text(episode_headline(_runtime("too short", 16.0)))
    assert episode_headline(None) == [] and episode_headline({}) == []


def test_a_run_fails_when_any_stream_failed_and_passes_only_when_one_was_judged() -> None:
    assert run_verdict([_runtime("pass", 16), _runtime("fail", 12)]) == "fail"
    assert run_verdict([_runtime("pass", 16), _runtime("too short", 16)]) == "pass"
    assert run_verdict([_runtime("too short", 16)]) == "too short"
    text = _text(run_headline([_runtime("pass", 16.0), _runtime("fail", 12.2)], 1, 2))
    assert "not real-time" in text and "12.2 native fps, worst window" in text
    assert "1/2 cases ok" in text and "1920 of 3840 frames received were native" in text
    assert run_headline([], 0, 0) == []


def test_the_index_shows_it_before_the_master_table(tmp_path: Path) -> None:
    root = write_sample_results(tmp_path / "out")
    assert "Is it real-time" not in render_index(root)  # no runtime block: as before
    path = next(root.rglob("scores.json"))
    doc = json.loads(path.read_text())
    doc["runtime"] = _runtime("fail", 12.2)
    path.write_text(json.dumps(doc))
    html = render_index(root)
    assert "Is it real-time" in html and html.index("Is it real-time") < html.index("<table")

"""The dashboard's throughput panel counts a served stream's frames that are not native
(docs/methods.md#native-frames): a doubling server shows half its frames there, in yellow;
a session without the counts (in process, a replay) shows no such row."""

from __future__ import annotations

from dataclasses import replace

from streameval.tui.widgets.throughput import throughput_text

from streameval.core.observers import Progress
from streameval.transports.native_gate import LIVE_KEY
from tests.tui.sample import sample_info


def _progress(extra: dict[str, object]) -> Progress:
    info = sample_info("ep")
    info = replace(info, extra={**info.extra, **extra})
    return Progress(info, 10, "W", 0.1, 0.0, 11, 100, 16.0, 0, 0)


def test_a_doubling_stream_shows_its_repeats() -> None:
    text = throughput_text(_progress({LIVE_KEY: [50, 50, 0]}), 100, 32, 0.1, False, 24)
    line = next(s for s in text.split() if s.plain.startswith("not native"))
    assert line.plain.split()[-1] == "50"
    assert any("yellow" in str(span.style) for span in line.spans)


def test_no_row_without_counts_or_when_all_are_native() -> None:
    for extra in ({}, {LIVE_KEY: [0, 0, 0]}):
        text = throughput_text(_progress(extra), 100, 32, 0.1, False, 24)
        assert "not native" not in text.plain
    text = throughput_text(_progress({LIVE_KEY: [100, 0, 0]}), 100, 32, 0.1, False, 24)
    line = next(s for s in text.split() if s.plain.startswith("not native"))
    assert line.plain.split()[-1] == "0" and not line.spans

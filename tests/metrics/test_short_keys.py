"""The shortest key the control columns score (docs/methods.md#shortest-keys), checked against
the windows scoring itself uses."""

from __future__ import annotations

import pytest

from streameval.constants import MIN_WINDOW_SAMPLES
from streameval.metrics.segments import segment_span
from streameval.metrics.short_keys import (
    key_length_text,
    planned_short_keys,
    seconds_up,
    shortest_key_s,
)


@pytest.mark.parametrize("fps", [12.0, 15.0, 16.0, 17.0, 19.08, 24.0, 30.0])
def test_the_shortest_key_is_the_first_with_three_stable_samples(fps: float) -> None:
    n = round(shortest_key_s(fps) * fps)
    for start in (0, 37, 1000):  # the zone's float edges move with the segment's start
        got = len(segment_span(1, "A", start, start + n, False, start + n, fps).stable)
        assert got >= MIN_WINDOW_SAMPLES - (start > 0)  # one sample either side of lo + 3
    assert len(segment_span(1, "A", 0, n - 1, False, n - 1, fps).stable) < MIN_WINDOW_SAMPLES
    # 3 s head + 1 s tail + 2 frames, give or take the float edges and a fractional fps
    assert 4.0 + 2 / fps <= shortest_key_s(fps) <= 4.0 + 4 / fps


def test_text_rounds_up() -> None:
    assert seconds_up(4.125) == "4.13 s" and seconds_up(4.1) == "4.10 s"
    assert key_length_text(16.0) == "keys of at least 4.13 s at 16 fps"


def test_a_plan_with_short_keys_says_how_many_and_how_long() -> None:
    short = planned_short_keys(["W", "S"], 3.0, 16.0)
    assert short is not None and (short.short, short.keyed) == (1, 2)
    assert short.line() == (
        "1 of 2 keys too short for the control columns "
        "(3 s; they need keys of at least 4.13 s at 16 fps)"
    )
    # two keys of 4 s: the last segment keeps its tail, 1 s of stable samples
    assert planned_short_keys(["W", "S"], 4.0, 16.0) is None
    # three keys of 4.1 s: the middle one loses 3 s + 1 s
    mid = planned_short_keys(["A", "D", "A"], 4.1, 16.0)
    assert mid is not None and mid.short == 1
    assert planned_short_keys(["A", "D", "A"], shortest_key_s(16.0), 16.0) is None

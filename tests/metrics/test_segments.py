"""Segment spans and stable zones (docs/methods.md#control-segments) against a naive time-based
reference."""

from __future__ import annotations

import random

import pytest

from streameval.errors import UnknownKeyError
from streameval.metrics.segments import equal_split_spans, segment_spans

SpanTuple = tuple[int, str, int, int, list[int], list[int]]


def naive_spans(frame_keys: list[str], n_signals: int, fps: float) -> list[SpanTuple]:
    """Runs of equal keys; stable zone by *time*, the reference's inclusive edges
    (docs/methods.md#control-segments)."""
    runs: list[tuple[str, int, int]] = []
    for frame, key in enumerate(frame_keys):
        if runs and runs[-1][0] == key:
            runs[-1] = (key, runs[-1][1], frame + 1)
        else:
            runs.append((key, frame, frame + 1))
    out: list[SpanTuple] = []
    for j, (key, start, end) in enumerate(runs):
        full = [i for i in range(n_signals) if start <= i < end]
        stable = []
        for i in full:
            t = i / fps
            if j > 0 and not t >= start / fps + 3.0:
                continue
            if j < len(runs) - 1 and not t <= end / fps - 1.0:
                continue
            stable.append(i)
        out.append((j, key, start, end, full, stable))
    return out


def as_tuples(frame_keys: list[str], n_signals: int, fps: float) -> list[SpanTuple]:
    return [
        (s.index, s.key, s.start, s.end, list(s.full), list(s.stable))
        for s in segment_spans(frame_keys, n_signals, fps)
    ]


@pytest.mark.parametrize("fps", [16.0, 24.5, 29.97, 8.0])
@pytest.mark.parametrize("seed", range(12))
def test_random_key_logs_match_naive(fps: float, seed: int) -> None:
    rng = random.Random(seed)
    keys: list[str] = []
    for _ in range(rng.randint(1, 5)):
        keys += [rng.choice("WSADLR-")] * rng.randint(1, int(8 * fps))
    n_signals = max(0, len(keys) - rng.choice([0, 1, 2, 40]))
    assert as_tuples(keys, n_signals, fps) == naive_spans(keys, n_signals, fps)


def test_stable_zone_boundaries_at_16_fps() -> None:
    keys = ["W"] * 320 + ["S"] * 320 + ["W"] * 320
    spans = segment_spans(keys, 958, 16)
    # first: no head skip, 1 s tail skip (the sample exactly 1 s before the end is kept, as in
    # the reference); middle: both; last: head only, clipped to the signals.
    assert [s.stable for s in spans] == [range(0, 305), range(368, 625), range(688, 958)]
    assert [s.full for s in spans] == [range(0, 320), range(320, 640), range(640, 958)]
    assert [s.family for s in spans] == ["fwd", "fwd", "fwd"]


def test_stable_zone_boundaries_at_non_integer_fps() -> None:
    keys = ["A"] * 490 + ["L"] * 490 + ["D"] * 490  # 20 s per key at 24.5 fps
    spans = segment_spans(keys, 1468, 24.5)
    # i <= 490 - 24.5 -> last 465; i >= 490 + 73.5 -> first 564; i <= 980 - 24.5 -> last 955.
    assert [s.stable for s in spans] == [range(0, 466), range(564, 956), range(1054, 1468)]


def test_single_segment_keeps_everything() -> None:
    spans = segment_spans(["R"] * 100, 98, 16)
    assert len(spans) == 1
    assert spans[0].stable == range(0, 98)
    assert spans[0].family == "yaw"


def test_no_key_segments_count_for_numbering_and_rules() -> None:
    keys = ["-"] * 32 + ["W"] * 320
    spans = segment_spans(keys, 350, 16)
    assert [(s.index, s.key, s.scored) for s in spans] == [(0, "-", False), (1, "W", True)]
    assert spans[0].family is None
    assert spans[1].stable == range(32 + 48, 350)  # j > 0: the head is skipped


def test_segment_past_the_signals_is_empty() -> None:
    keys = ["W"] * 100 + ["S"] * 2
    spans = segment_spans(keys, 100, 16)
    assert spans[1].full == range(100, 100)
    assert len(spans[1].stable) == 0


def test_short_middle_segment_has_empty_stable_zone() -> None:
    keys = ["W"] * 100 + ["S"] * 40 + ["W"] * 100  # S lasts 2.5 s < 3 s + 1 s
    spans = segment_spans(keys, 238, 16)
    assert len(spans[1].stable) == 0


def test_keys_are_canonicalised() -> None:
    spans = segment_spans(["w", "W", " w "], 3, 16)
    assert [(s.key, s.start, s.end) for s in spans] == [("W", 0, 3)]


def test_empty_log() -> None:
    assert segment_spans([], 0, 16) == []


def test_more_signals_than_keys_is_an_error() -> None:
    with pytest.raises(ValueError, match="signal i needs the key of frame i"):
        segment_spans(["W"] * 10, 11, 16)


def test_unknown_key_names_the_frame() -> None:
    with pytest.raises(UnknownKeyError, match="frame 2"):
        segment_spans(["W", "W", "Q"], 3, 16)


@pytest.mark.parametrize("fps", [0, -1, float("nan"), float("inf")])
def test_bad_fps(fps: float) -> None:
    with pytest.raises(ValueError, match="fps"):
        segment_spans(["W"], 1, fps)


def test_float_effects_at_three_seconds_follow_the_reference() -> None:
    # 3 s at 10/3 fps is 10 samples in exact arithmetic; the reference compares i/fps with
    # lo + 3.0 in float64 as written, so whichever side the rounding falls on is the answer.
    fps = 10 / 3
    spans = segment_spans(["W"] * 20 + ["S"] * 20, 40, fps)
    first = 30 if 30 / fps >= 20 / fps + 3.0 else 31
    assert spans[1].stable.start == first


def test_equal_split_uses_the_last_sample_time() -> None:
    # 161 samples at 16 fps: dur = 10 s, two keys of 5 s each; the zone of S starts at 8 s.
    spans = equal_split_spans(["W", "S"], 161, 16)
    assert [(s.lo_s, s.hi_s, s.length_s) for s in spans] == [(0.0, 5.0, 5.0), (5.0, 10.0, 5.0)]
    assert spans[0].full == range(0, 80) and spans[1].full == range(80, 161)
    assert spans[0].stable == range(0, 65)  # t <= 4.0 inclusive
    assert spans[1].stable == range(128, 161)  # t >= 8.0, through the last sample


def test_equal_split_repeats_keys_as_segments() -> None:
    spans = equal_split_spans(["W", "S", "W"], 100, 12)
    assert [s.key for s in spans] == ["W", "S", "W"]
    assert spans[-1].full.stop == 100

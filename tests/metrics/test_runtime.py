"""The runtime kernels (``metrics/runtime.py``) against naive references of LiveFrame's
definitions, on arrival times whose truth is known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streameval.metrics.runtime import (
    FAIL,
    MIN_STREAM_S,
    PASS,
    STEP_S,
    TOO_SHORT,
    WINDOW_S,
    intervals,
    nearest_rank,
    stalls,
    sustained_windows,
    verdict,
    warning_of,
)


def _naive_windows(ts: list[float], t0: float, window: float = WINDOW_S) -> list[float]:
    """LiveFrame's loop: windows (a, a + 10] from t0 by 1 s while a + 10 <= the last frame."""
    last = ts[-1]
    if last - t0 <= window:
        return [sum(1 for t in ts if t > t0) / (last - t0)]
    out, anchor = [], t0
    k = 0
    while anchor + window <= last:
        out.append(sum(1 for t in ts if anchor < t <= anchor + window) / window)
        k += 1
        anchor = t0 + k * STEP_S
    return out


def _clock(seconds: float, fps: float, start: float = 0.0, jitter: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(0)
    t = start + np.arange(1, int(seconds * fps) + 1) / fps
    return t + rng.uniform(-jitter, jitter, t.size)


@pytest.mark.parametrize("seconds", [5.0, 10.0, 25.3, 70.0])
def test_sustained_windows_match_liveframes_loop(seconds: float) -> None:
    t = _clock(seconds, 16.0, start=3.0, jitter=0.01)
    got = sustained_windows(t, 3.0)
    want = _naive_windows(sorted(t.tolist()), 3.0)
    assert got.tolist() == pytest.approx(want)
    minute = sustained_windows(t, 3.0, MIN_STREAM_S)
    assert minute.tolist() == pytest.approx(_naive_windows(sorted(t.tolist()), 3.0, MIN_STREAM_S))


def test_nearest_rank_is_the_ceil_rank() -> None:
    values = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert nearest_rank(values, 0.5) == 3.0
    assert nearest_rank(values, 0.95) == 5.0
    assert nearest_rank(values, 0.0) == 1.0
    assert nearest_rank([], 0.5) is None
    rng = np.random.default_rng(1)
    for _ in range(50):
        v = rng.normal(size=int(rng.integers(1, 40)))
        q = float(rng.uniform(0, 1))
        s = sorted(v.tolist())
        assert nearest_rank(v, q) == s[min(max(1, math.ceil(q * len(s))), len(s)) - 1]


def test_stalls_and_intervals() -> None:
    t = np.array([0.0, 0.1, 0.2, 1.5, 1.6, 4.0, 4.1])
    assert stalls(t, 1.0) == (2, pytest.approx(1.3 + 2.4))
    got = intervals(t)
    assert got["p50_s"] == pytest.approx(0.1) and got["max_s"] == pytest.approx(2.4)
    assert intervals(np.array([1.0]))["p50_s"] is None


def test_an_honest_16_fps_minute_passes_a_stalled_one_fails_a_short_one_is_too_short() -> None:
    honest = _clock(MIN_STREAM_S + 5, 16.0, jitter=0.01)
    windows = sustained_windows(honest, 0.0)
    assert verdict(65.0, float(windows.min()), stalls(honest, 1.125)[0], 16.0) == PASS
    # the same stream with a 3 s stall in the middle: its worst window drops, and it stalled
    stalled = np.concatenate([honest[honest < 30], honest[honest >= 30] + 3.0])
    windows = sustained_windows(stalled, 0.0)
    n, _ = stalls(stalled, 1.125)
    assert n == 1 and float(windows.min()) < 16.0
    assert verdict(68.0, float(windows.min()), n, 16.0) == FAIL
    # a fast but short stream is never a pass
    short = _clock(20.0, 30.0)
    assert verdict(20.0, float(sustained_windows(short, 0.0).min()), 0, 16.0) == TOO_SHORT
    # within two frames a window: a jitter at the edges; three short is a fail
    assert verdict(70.0, 15.8, 0, 16.0) == PASS and verdict(70.0, 15.7, 0, 16.0) == FAIL
    # a 15 fps stream fails the 16 fps target and passes a 12 fps one
    slow = _clock(70.0, 15.0, jitter=0.005)
    worst = float(sustained_windows(slow, 0.0).min())
    assert verdict(70.0, worst, 0, 16.0) == FAIL and verdict(70.0, worst, 0, 12.0) == PASS


def test_the_warning_line_names_the_share() -> None:
    block = {
        "non_native_share": 0.5,
        "repeat_frames": 80,
        "interpolated_frames": 0,
        "native_frames": 80,
        "native_rate_fps": 16.0,
        "announced_fps": 32.0,
    }
    line = warning_of(block)
    assert line is not None and "50%" in line and "80 repeated" in line
    assert warning_of({**block, "non_native_share": 0.05}) is None

"""The wall-time primitives (streameval/metrics/timing.py) against naive loops written here,
on seeded arrival times with gaps (NaN), out-of-order times and noisy signals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streameval.constants import FLOW_STRIDE
from streameval.metrics.timing import KeyResponse, key_response, reference_bar, wall_rate


def _naive_rate(arrivals: list[float]) -> tuple[int, float, float | None]:
    times = [t for t in arrivals if t == t]  # NaN != NaN: no arrival time
    if len(times) < 2:
        return len(times), 0.0, None
    span = max(times) - min(times)
    return len(times), span, (len(times) - 1) / span if span > 0 else None


def _naive_response(
    signal: list[float],
    arrivals: list[float],
    t_key: float,
    t_end: float,
    bar: float,
    end_inclusive: bool,
    first_sample: int,
) -> tuple[int, float] | None:
    n = min(len(signal), max(0, len(arrivals) - FLOW_STRIDE))
    for i in range(first_sample, n):
        seen = arrivals[i + FLOW_STRIDE]  # sample i shows once frame i + stride arrived
        if seen != seen or seen < t_key:
            continue
        if seen > t_end or (seen == t_end and not end_inclusive):
            continue
        if signal[i] >= bar:
            return i, seen - t_key
    return None


def _arrivals(rng: np.random.Generator, n: int) -> np.ndarray:
    t = np.cumsum(rng.uniform(0.0, 0.2, n))
    if n > 3 and rng.random() < 0.3:
        t[rng.integers(0, n)] -= 0.5  # an out-of-order time, as a hand-edited rollout has
    t[rng.random(n) < 0.1] = np.nan
    return t


@pytest.mark.parametrize("seed", range(60))
def test_wall_rate_matches_the_naive_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    arrivals = _arrivals(rng, int(rng.integers(0, 40)))
    if seed % 10 == 0 and arrivals.size:
        arrivals[:] = 1.0  # every frame at once: no span
    rate = wall_rate(arrivals)
    frames, span, fps = _naive_rate(arrivals.tolist())
    assert (rate.frames, rate.wall_s) == (frames, pytest.approx(span, abs=1e-12))
    assert (rate.fps is None) == (fps is None)
    if fps is not None:
        assert rate.fps == pytest.approx(fps, rel=1e-12)


def test_a_perfect_clock_gives_its_own_rate_exactly() -> None:
    assert wall_rate([i / 16 for i in range(65)]).fps == 16.0
    assert wall_rate([]).fps is None and wall_rate([0.0, math.nan]).frames == 1


@pytest.mark.parametrize("seed", range(80))
@pytest.mark.parametrize("end_inclusive", [False, True])
def test_key_response_matches_the_naive_loop(seed: int, end_inclusive: bool) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    arrivals = np.round(_arrivals(rng, n), 2)  # rounded: some times equal t_end exactly
    signal = rng.standard_normal(max(0, n - FLOW_STRIDE + int(rng.integers(-2, 2))))
    signal[rng.random(signal.size) < 0.1] = np.nan
    finite = arrivals[np.isfinite(arrivals)]
    top = float(finite.max()) if finite.size else 1.0
    t_key = float(np.round(rng.uniform(0, top), 2))
    t_end = float(np.round(t_key + rng.uniform(0.0, 2.0), 2)) if seed % 4 else math.inf
    bar = float(rng.uniform(-0.5, 1.5))
    first = int(rng.integers(0, 10)) if seed % 3 == 0 else 0
    got = key_response(
        signal, arrivals, t_key, t_end, bar, end_inclusive=end_inclusive, first_sample=first
    )
    want = _naive_response(
        signal.tolist(), arrivals.tolist(), t_key, t_end, bar, end_inclusive, first
    )
    assert (got.sample, got.latency_s) == want if got is not None else want is None


def test_the_window_end_is_included_only_when_asked() -> None:
    arrivals = np.arange(20) / 10.0
    signal = np.zeros(18)
    signal[8:] = 1.0  # sample 8 shows once frame 10 has arrived, at t = 1.0
    assert key_response(signal, arrivals, 0.25, 1.0, 0.5, end_inclusive=False) is None
    hit = key_response(signal, arrivals, 0.25, 1.0, 0.5, end_inclusive=True)
    assert hit == KeyResponse(8, 0.75)
    # a later first sample skips the early answer
    late = np.zeros(18)
    late[[3, 12]] = 1.0
    assert key_response(late, arrivals, 0.0, math.inf, 0.5, end_inclusive=True) == KeyResponse(
        3, 0.5
    )
    skipped = key_response(late, arrivals, 0.0, math.inf, 0.5, end_inclusive=True, first_sample=4)
    assert skipped is not None and skipped.sample == 12


def test_reference_bar_is_a_share_of_the_reference_speed() -> None:
    from streameval.metrics.control.segment import reference_speed

    channel = np.array([1.0, -3.0, np.nan, 2.0, -0.5])
    assert reference_bar(channel, 0.5) == 0.5 * reference_speed(np.array([1.0, 3.0, 2.0, 0.5]))
    assert reference_bar(np.array([np.nan]), 0.5) == math.inf

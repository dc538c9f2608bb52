"""WorldAtlas's real-time kernels (streameval/metrics/worldatlas/realtime.py) against a naive
reference and synthetic signals of known latency, and the cache adapter's statuses."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from streameval.protocol.keys import expected_sign

from streameval.constants import FLOW_STRIDE
from streameval.core.episode.cache import EpisodeCache
from streameval.core.episode.timing import TimingCache
from streameval.metrics.timing import wall_rate
from streameval.metrics.worldatlas.constants import RESPONSE_TIMEOUT_S
from streameval.metrics.worldatlas.realtime import (
    Response,
    action_responses,
    budget_pass_rate,
    clamp01,
    latency_score,
    mean_latency,
    realtime_factor,
    response_sample,
    response_threshold,
)
from streameval.metrics.worldatlas.realtime_scores import NOT_LIVE, NOT_SERVED, realtime_metrics

FPS = 16.0


def _naive_response(
    signal: list[float], arrivals: list[float], t0: float, t_end: float, floor: float
) -> int | None:
    """The rule spelled out with loops: change frame, 4-sample baseline, first sample over."""
    c = next((i for i, t in enumerate(arrivals) if t == t and t >= t0), len(arrivals))
    first = max(0, c - FLOW_STRIDE)
    base = [v for v in signal[max(0, first - 4) : first] if v == v]
    bar = floor
    if base:
        mean = sum(base) / len(base)
        std = math.sqrt(sum((v - mean) ** 2 for v in base) / len(base))
        bar = max(floor, mean + 2 * std)
    n = min(len(signal), max(0, len(arrivals) - FLOW_STRIDE))
    for i in range(first, n):
        seen = arrivals[i + FLOW_STRIDE]
        if seen == seen and t0 <= seen <= t_end and signal[i] >= bar:
            return i
    return None


def _step_signal(n: int, onset: int, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = noise * rng.standard_normal(n)
    v[onset:] += 1.0
    return v


@pytest.mark.parametrize("seed", range(40))
def test_response_sample_matches_the_naive_rule(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 60))
    signal = rng.standard_normal(n - FLOW_STRIDE) if n > FLOW_STRIDE else np.zeros(0)
    signal[rng.random(signal.size) < 0.1] = np.nan
    arrivals = np.cumsum(rng.uniform(0.02, 0.2, n))
    arrivals[rng.random(n) < 0.1] = np.nan
    t0 = float(rng.uniform(0, np.nanmax(arrivals)))
    t_end = t0 + float(rng.uniform(0.1, 2.0))
    floor = float(rng.uniform(0, 1.5))
    hit = response_sample(signal, arrivals, t0, t_end, floor)
    got = hit.sample if hit is not None else None
    assert got == _naive_response(signal.tolist(), arrivals.tolist(), t0, t_end, floor)


def test_a_known_onset_gives_its_latency_in_seconds_and_frames() -> None:
    n = 64
    arrivals = np.arange(n) / FPS
    change = 16  # the key is sent just before frame 16 arrives
    onset = 20  # the first sample moving the commanded way: seen when frame 22 arrives
    signal = _step_signal(n - FLOW_STRIDE, onset)
    t0 = arrivals[change] - 0.01
    [r] = action_responses(
        [signal], arrivals, np.array([t0]), np.array([math.inf]), np.full(1, 0.5)
    )
    assert r.frames == onset + FLOW_STRIDE - change
    assert r.latency_s == pytest.approx((onset + FLOW_STRIDE) / FPS - t0)


def test_the_baseline_raises_the_bar_over_noise_before_the_change() -> None:
    """A world that already drifts the commanded way before the key: only motion above the
    baseline's mean + 2 std answers it, not the drift."""
    n = 48
    arrivals = np.arange(n) / FPS
    signal = np.full(n - FLOW_STRIDE, 0.5)
    signal[::2] = 0.6  # baseline mean 0.55, std 0.05: bar 0.65
    signal[30:] = 0.9
    t0 = arrivals[20] - 0.001
    assert response_threshold(signal[14:18], 0.1) == pytest.approx(0.65)
    hit = response_sample(signal, arrivals, t0, math.inf, 0.1)
    assert hit is not None and hit.sample == 30


def test_an_unanswered_change_counts_as_the_timeout_and_fails_the_budget() -> None:
    n = 80
    arrivals = np.arange(n) / FPS
    late = _step_signal(n - FLOW_STRIDE, 16 + int(1.5 * FPS))  # 1.5 s after the change
    quick = _step_signal(n - FLOW_STRIDE, 4)
    times = np.array([arrivals[16] - 0.001, arrivals[2] - 0.001])
    nexts = np.array([math.inf, math.inf])
    late_r, quick_r = action_responses([late, quick], arrivals, times, nexts, np.full(2, 0.5))
    assert late_r == Response(RESPONSE_TIMEOUT_S, None) and not late_r.answered
    assert quick_r.answered and quick_r.latency_s < 0.5
    assert budget_pass_rate([late_r, quick_r], 1.0) == 0.5
    raw = mean_latency([late_r, quick_r])
    assert raw == pytest.approx((1.0 + quick_r.latency_s) / 2)
    # a longer search window answers the late change, at its own latency
    [found] = action_responses([late], arrivals, times[:1], nexts[:1], np.full(1, 0.5), 2.0)
    assert found.answered and 1.5 < found.latency_s < 1.7


def test_the_next_change_ends_the_search() -> None:
    n = 64
    arrivals = np.arange(n) / FPS
    signal = _step_signal(n - FLOW_STRIDE, 30)
    t0, t_next = arrivals[16] - 0.001, arrivals[24]
    [r] = action_responses([signal], arrivals, np.array([t0]), np.array([t_next]), np.full(1, 0.5))
    assert not r.answered


def test_throughput_kernels() -> None:
    arrivals = np.arange(33) / 8.0  # 8 fps delivered for a 16 fps model: half real time
    arrivals[5] = np.nan
    rate = wall_rate(arrivals)
    assert (rate.frames, rate.wall_s) == (32, 4.0)
    assert rate.fps == pytest.approx(31 / 4)
    assert realtime_factor(rate, FPS) == pytest.approx(31 / 4 / FPS)
    assert wall_rate([1.0]).fps is None and realtime_factor(wall_rate([2.0, 2.0]), FPS) is None
    assert clamp01(1.7) == 1.0 and clamp01(-0.2) == 0.0
    assert latency_score(0.25, 1.0) == 0.75 and latency_score(3.0, 1.0) == 0.0
    assert budget_pass_rate([], 1.0) is None and mean_latency([]) is None


def _cache(meta: dict[str, Any], timing: TimingCache | None, n: int = 64) -> EpisodeCache:
    signal = expected_sign("D") * _step_signal(n - FLOW_STRIDE, 20)
    return EpisodeCache(
        meta={"fps": FPS, "model": "m", "suite": "s", "episode": "e", **meta},
        frame_keys=["D"] * n,
        sx=signal,
        srad=np.zeros(n - FLOW_STRIDE),
        timing=timing,
    )


def _timing(n: int = 64, keys: tuple[str, ...] = ("D",)) -> TimingCache:
    arrivals = np.arange(n) / FPS
    return TimingCache(arrivals, np.array([arrivals[16] - 0.001] * len(keys)), list(keys))


def test_the_adapter_scores_a_served_session_on_the_unit_scale() -> None:
    meta = {"session": "served", "provenance": {"config": {"latency_budget_s": 0.5}}}
    out = realtime_metrics(_cache({**meta, "interactivity": {"chunk_frames_median": 4}}, _timing()))
    fps = out["effective_generation_fps"]
    assert fps.status == "official" and fps.raw == pytest.approx(FPS)
    assert fps.normalized == pytest.approx(1.0)
    assert out["realtime_factor"].raw == pytest.approx(1.0)
    lat = out["action_response_latency"]
    assert lat.raw == pytest.approx(22 / FPS - (16 / FPS - 0.001))
    assert lat.normalized == pytest.approx(1 - lat.raw / 0.5)
    assert lat.details["latency_chunks"] == pytest.approx(lat.details["latency_frames"] / 4)
    assert lat.details["budget_seconds"] == 0.5
    assert out["latency_budget_pass_rate"].normalized == 1.0


def test_the_adapter_never_makes_up_a_number() -> None:
    in_process = realtime_metrics(_cache({"session": "in-process"}, _timing()))
    assert in_process["effective_generation_fps"].reason == NOT_SERVED
    assert in_process["realtime_factor"].status == "not_applicable"
    assert in_process["action_response_latency"].status == "official"
    replay = realtime_metrics(_cache({"session": None}, None))
    assert {m.reason for m in replay.values()} == {NOT_LIVE}
    old = realtime_metrics(_cache({}, None))
    assert {m.status for m in old.values()} == {"missing"}
    no_keys = realtime_metrics(_cache({"session": "served"}, _timing(keys=("-",))))
    assert no_keys["latency_budget_pass_rate"].status == "not_applicable"
    one = TimingCache(np.array([0.0] + [np.nan] * 63), np.zeros(0), [])
    single = realtime_metrics(_cache({"session": "served"}, one))
    assert single["effective_generation_fps"].status == "missing"

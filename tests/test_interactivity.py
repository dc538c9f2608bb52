"""Interactivity kernels against naive references and clips of known timing."""

from __future__ import annotations

import numpy as np

from streameval.interactivity import arrival_stats, key_response_latencies, latency_summary


def test_arrival_stats_match_a_naive_loop() -> None:
    rng = np.random.default_rng(0)
    t = np.cumsum(1 / 16 + rng.normal(0, 0.004, 200))
    t[100:] += 0.5  # one stall of ~9 intervals
    stats = arrival_stats(list(t), 16.0)
    gaps = [t[i + 1] - t[i] for i in range(len(t) - 1)]
    jitter = sorted(abs(g - 1 / 16) for g in gaps)
    assert stats["stalls"] == sum(g > 3 / 16 for g in gaps) == 1
    assert abs(stats["jitter_ms_p50"] - 1000 * float(np.percentile(jitter, 50))) < 1e-3  # type: ignore[operator]
    assert abs(stats["delivered_fps"] - (len(t) - 1) / (t[-1] - t[0])) < 1e-3  # type: ignore[operator]
    assert abs(stats["stall_seconds"] - (gaps[99])) < 1e-3  # type: ignore[operator]


def test_perfect_clock_has_zero_jitter_and_no_stalls() -> None:
    stats = arrival_stats([i / 16 for i in range(50)], 16.0)
    assert stats["jitter_ms_p95"] == 0.0 and stats["stalls"] == 0
    assert stats["delivered_fps"] == 16.0


def test_key_to_response_latency_of_a_known_delay() -> None:
    # 64 frames at 16 fps; key D sent at t=1.0 s, the world moves (Sx < 0) from frame 40 on
    arrivals = np.arange(64) / 16.0
    n = 62
    sx = np.zeros(n)
    sx[40 - 2 :] = -3.0  # sample i shows frames i .. i+2: motion from frame 40 on
    srad = np.zeros(n)
    lat = key_response_latencies([1.0], ["D"], arrivals, sx, srad)
    assert lat == [40 / 16 - 1.0]
    # the opposite motion never counts as a response
    assert key_response_latencies([1.0], ["A"], arrivals, sx, srad) == [None]
    summary = latency_summary([0.5, None, 1.5])
    assert summary["key_switches"] == 3 and summary["key_responses"] == 2
    assert summary["key_to_response_ms_median"] == 1000.0

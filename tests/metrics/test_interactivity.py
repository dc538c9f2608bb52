"""Interactivity kernels against naive references and clips of known timing."""

from __future__ import annotations

import numpy as np

from streameval.engine.episode_stats import SERVER_FIGURES
from streameval.metrics.interactivity import arrival_stats, key_response_latencies, latency_summary
from streameval.metrics.registry import metric_names, metric_specs
from streameval.transports.arrivals import ArrivalLog


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


def test_interactivity_figures_are_registered_metadata_in_their_own_units() -> None:
    specs = metric_specs(family="interactivity")
    names = {s.name for s in specs}
    assert {"delivered_fps", "jitter_ms_p50", "jitter_ms_p95", "frames_dropped"} <= names
    assert {"frames_missing", "stalls", "key_to_response_ms_median"} <= names
    for spec in specs:
        assert spec.kernel is None and not spec.column and spec.unit
        assert spec.higher_is_better == (spec.name == "delivered_fps")
    # the scores writer runs no kernel for them: nothing under "metrics" changes
    assert not names & set(metric_names(column=True))
    # every registered name is written by a producer (scores.json keeps its keys)
    produced = {
        *arrival_stats([0.0, 0.1, 0.2], 10.0),
        *latency_summary([0.2]),
        *ArrivalLog().counters(),
        "frames_dropped",  # pipeline.Episode.interactivity
        *SERVER_FIGURES,  # the server's own chunk statistics, when it reports them
    }
    assert names <= produced


def test_dashboard_line_shows_a_served_sessions_figures_with_units() -> None:
    from streameval.tui.widgets.final_metrics import interactivity_line

    from tests.tui.sample import sample_outcome

    outcome = sample_outcome("ep", 64)
    assert interactivity_line(outcome) is None  # in process: the real-time factor says it
    outcome.interactivity.update(
        transport="mqtt", delivered_fps=15.9, jitter_ms_p95=3.2, key_to_response_ms_median=212.4
    )
    line = interactivity_line(outcome)
    assert line is not None
    text = line.plain
    assert "fps 15.9 fps" in text and "p95 3.2 ms" in text and "key→response 212 ms" in text
    assert "dropped 0 frames" in text

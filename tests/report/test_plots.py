"""The report's overlays read what the kernels scored: Motion Stability's dips (same smoothing
and 0.4·g threshold), latency markers at switches, key runs for the shading; figures are PNG."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from streameval.report.data import EpisodeData
from streameval.report.plots import (
    key_runs,
    latency_markers,
    local_memory_figure,
    signals_figure,
    stability_dips,
)

FPS = 16.0
PNG = b"\x89PNG\r\n\x1a\n"


def _episode() -> EpisodeData:
    """A (16 s): Sx = +8 except a 1 s stall at 4–5 s; then D (8 s) at −8. Stability window of
    the A segment covers frames 0–240 with g = 8."""
    sx = np.full(384, 8.0)
    sx[64:80] = 0.0
    sx[256:] = -8.0
    keys = ["A"] * 256 + ["D"] * 128
    segments = [
        {"key": "A", "status": "scored", "g": 8.0, "window_start": 0, "window_end": 240},
        {"key": "D", "status": "scored", "g": 8.0, "window_start": 304, "window_end": 384},
    ]
    latency = [{"key": "D", "t0_s": 16.0, "latency_s": 0.25, "reached": True}]
    scores = {
        "fps": FPS,
        "metrics": {
            "motion_stability_trans": {"details": {"segments": segments}},
            "response_latency_trans": {"details": {"segments": latency}},
            "local_memory": {
                "details": {
                    "sampled_frames": [0, 10, 20],
                    "pairs": [[0, 10], [10, 20]],
                    "pair_distances": [0.02, 0.3],
                    "flagged_pairs": [[10, 20]],
                    "tau_mut": 0.1,
                }
            },
        },
    }
    return EpisodeData(Path("."), scores, sx, np.zeros(384), keys)


def test_key_runs() -> None:
    assert key_runs(list("WWAAAD")) == [("W", 0, 2), ("A", 2, 5), ("D", 5, 6)]
    assert key_runs([]) == []


def test_stability_dips_match_a_naive_smoothing_of_the_stall() -> None:
    data = _episode()
    dips = stability_dips(data)
    frames = sorted(round(t * FPS) for t, _, channel in dips if channel == "sx")
    # naive reference: centred 4-sample mean (k = int(0.3·16)), zero-padded, below 0.4·g
    assert data.sx is not None
    v = data.sx[0:240]
    padded = np.concatenate([np.zeros(2), v, np.zeros(1)])
    smooth = np.array([padded[i : i + 4].mean() for i in range(240)])
    expected = [i for i in range(240) if smooth[i] < 0.4 * 8.0]
    assert frames == expected
    assert {66, 78} <= set(frames) and 100 not in frames and 0 not in frames


def test_a_scored_window_shorter_than_the_smoothing_has_its_dips_on_its_samples() -> None:
    # a 3-frame window under a 4-sample smoothing (a short R segment of WorldFoundry Studio's
    # own server at 17 fps): the smoothed series is longer than the samples; the report
    # failed on it ("zip() argument 2 is longer than argument 1")
    data = _episode()
    assert data.sx is not None
    data.sx[304:307] = 0.0
    segments = data.details("motion_stability_trans")["segments"]
    segments[1].update(window_start=304, window_end=307)
    frames = sorted(round(t * FPS) for t, _, channel in stability_dips(data) if channel == "sx")
    assert [f for f in frames if f >= 256] == [304, 305, 306]
    assert signals_figure(data) is not None


def test_latency_markers() -> None:
    assert latency_markers(_episode()) == [(16.0, 0.25, "D")]


def test_figures_are_png() -> None:
    data = _episode()
    signals = signals_figure(data)
    assert signals is not None and signals.startswith(PNG)
    memory = local_memory_figure(data, {})
    assert memory is not None and memory.startswith(PNG)
    data.sx = None
    assert signals_figure(data) is None

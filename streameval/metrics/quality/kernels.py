"""Quality kernels: Q-Align's rating arithmetic (docs/methods.md#perceptual_quality) and rollout
drift (WorldAtlas, docs/methods.md#rollout_imaging_drift).

Pure numpy over what the cache keeps: the logits of the five rating words for the whole
episode and for each drift segment (computed once, at episode end, by the Q-Align backend),
and the CPU imaging statistics. ``rescore`` reruns these kernels without the model.

- Q-Align (WorldMark): softmax over the logits of {excellent, good, fair, poor, bad}, weighted
  by {5, 4, 3, 2, 1}: x in [1, 5]; the column is ``100·(x − 1)/4``. (The Q-Align scorer
  weights by {1, 0.75, 0.5, 0.25, 0} instead, which is the same number divided by 100:
  ``tests/metrics/quality/test_kernels.py`` checks the two against each other.)
- Drift (WorldAtlas ``rollout_imaging_drift`` / ``rollout_aesthetic_drift``): up to 300 frames
  evenly spread over the rollout, in 10 consecutive segments, one score per segment;
  ``drift = (best − worst)/|best|``; normalised ``100·(1 − clamp(drift, 0, 1))`` (WorldAtlas:
  lower is better, bounds 0 and 1; docs/methods.md#worldatlas-scale).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from streameval.core.metric_result import MetricResult

RATING_WORDS = ("excellent", "good", "fair", "poor", "bad")
RATING_VALUES = (5.0, 4.0, 3.0, 2.0, 1.0)
QUALITY_TASKS = {"perceptual_quality": "quality", "aesthetic_quality": "aesthetics"}
"""Master-table column -> the task word of the Q-Align prompt (VQA quality, IAA aesthetics)."""
DRIFT_MAX_FRAMES = 300
DRIFT_SEGMENTS = 10
DRIFT_METRICS = {"rollout_imaging_drift": "quality", "rollout_aesthetic_drift": "aesthetics"}
"""Drift metric -> the Q-Align task it is measured with when Q-Align ran."""


def rating_score(logits: Sequence[float] | npt.NDArray[np.floating]) -> float:
    """Softmax over the five rating-word logits (in ``RATING_WORDS`` order), weighted by
    ``RATING_VALUES``: a score in [1, 5]. Computed in float64, max-subtracted."""
    z = np.asarray(logits, dtype=np.float64)
    if z.shape != (len(RATING_WORDS),) or not np.isfinite(z).all():
        raise ValueError(f"expected {len(RATING_WORDS)} finite rating logits, got {z!r}")
    p = np.exp(z - z.max())
    p /= p.sum()
    return float(p @ np.asarray(RATING_VALUES))


def normalize_rating(score: float) -> float:
    """Q-Align's 1–5 score -> the master table's 0–100 (WorldMark: ``100·(x − 1)/4``,
    docs/methods.md#perceptual_quality)."""
    return 100.0 * (score - 1.0) / 4.0


def one_fps_frames(n_frames: int, fps: float) -> list[int]:
    """Q-Align's video sampling: frame ``int(fps·i)`` for each whole second
    ``i < int(n_frames / fps)`` (a final partial second is not sampled)."""
    return [int(fps * i) for i in range(int(n_frames / fps))]


def is_one_fps_frame(index: int, fps: float) -> bool:
    """Whether ``index`` is ``int(fps·i)`` for some whole second i (streaming test: the
    total is not known yet; :func:`one_fps_frames` trims the tail at the end)."""
    i = math.floor(index / fps)
    return any(int(fps * k) == index for k in (i - 1, i, i + 1) if k >= 0)


def drift_segments(n: int) -> list[npt.NDArray[np.int64]] | None:
    """Positions (into a sequence of ``n`` scored items) of the drift segments: up to
    ``DRIFT_MAX_FRAMES`` evenly spaced, split into ``DRIFT_SEGMENTS`` consecutive groups as
    equal as possible. None when there are fewer items than segments."""
    if n < DRIFT_SEGMENTS:
        return None
    picked = np.unique(np.round(np.linspace(0, n - 1, min(n, DRIFT_MAX_FRAMES))).astype(np.int64))
    return [np.asarray(s, dtype=np.int64) for s in np.array_split(picked, DRIFT_SEGMENTS)]


def rollout_drift(segment_scores: Sequence[float], details: dict[str, object]) -> MetricResult:
    """WorldAtlas rollout drift from one score per segment: ``(best − worst)/|best|``
    (docs/methods.md#rollout_imaging_drift)."""
    scores = np.asarray(segment_scores, dtype=np.float64)
    if scores.size < DRIFT_SEGMENTS:
        return MetricResult.not_applicable(
            f"{scores.size} scored segments, drift needs {DRIFT_SEGMENTS}", dict(details)
        )
    if not np.isfinite(scores).all():
        return MetricResult.missing("a segment score is not finite", dict(details))
    best, worst = float(scores.max()), float(scores.min())
    if best == 0.0:
        return MetricResult.not_applicable("best segment score is 0: drift undefined")
    drift = (best - worst) / abs(best)
    normalized = 100.0 * (1.0 - min(max(drift, 0.0), 1.0))
    out_details = {
        **details,
        "segment_scores": [float(s) for s in scores],
        "best": best,
        "worst": worst,
    }
    return MetricResult.official(drift, normalized, out_details)

"""Quality results of one episode from its cache: Q-Align columns, drift, imaging statistics.
The episode adapter the metric registry calls (``quality_scores``, ``metrics/catalog.py``),
beside the quality kernels it calls.

docs/methods.md#perceptual_quality: ``perceptual_quality`` and ``aesthetic_quality`` come from
Q-Align only; without it
they are not_applicable with what to download, never a number from a cheaper statistic. The
drift metrics of WorldAtlas (docs/methods.md#rollout_imaging_drift) use whichever backend ran:
Q-Align's two tasks when it ran, else the
CPU sharpness statistic for imaging drift (recorded in ``details.backend``); aesthetic drift
has no CPU stand-in.
"""

from __future__ import annotations

import numpy as np

from streameval.core.episode.quality import QualityCache
from streameval.core.metric_result import MetricResult
from streameval.metrics.quality.imaging import STAT_FIELDS, imaging_metrics
from streameval.metrics.quality.kernels import (
    DRIFT_METRICS,
    QUALITY_TASKS,
    drift_segments,
    normalize_rating,
    rating_score,
    rollout_drift,
)
from streameval.metrics.registry import ScoringInput

QUALITY_METRICS = tuple(QUALITY_TASKS)
NO_QALIGN = (
    "no Q-Align (OneAlign) backend ran: fetch it with `hf download q-future/one-align "
    "--local-dir DIR` and pass --quality qalign:DIR (or `rescore --quality qalign:DIR` on "
    "this results directory)"
)
NO_AESTHETIC_BACKEND = "aesthetic drift needs an aesthetic scorer (Q-Align); " + NO_QALIGN
CPU_IMAGING_BACKEND = "cpu-sharpness"


def _sharpness_drift(statistics: np.ndarray | None) -> MetricResult:
    """Imaging drift on the CPU sharpness statistic of the measured frames."""
    details: dict[str, object] = {"backend": CPU_IMAGING_BACKEND}
    if statistics is None or statistics.size == 0:
        return MetricResult.not_applicable("no imaging statistics in the cache", details)
    sharp = statistics[:, STAT_FIELDS.index("sharpness")]
    frames = np.flatnonzero(np.isfinite(sharp))
    segments = drift_segments(frames.size)
    if segments is None:
        return MetricResult.not_applicable(
            f"{frames.size} frames with a sharpness measurement, drift needs 10", details
        )
    scores = [float(sharp[frames[seg]].mean()) for seg in segments]
    details["frames"] = int(sum(seg.size for seg in segments))
    return rollout_drift(scores, details)


def quality_metrics(quality: QualityCache | None, fps: float) -> dict[str, MetricResult]:
    """Every quality result of the episode (names: ``QUALITY_METRICS``, ``DRIFT_METRICS``,
    ``metrics.quality.imaging.STATISTIC_METRICS``)."""
    statistics = quality.statistics if quality is not None else None
    out = imaging_metrics(statistics, fps)
    ratings = quality.ratings if quality is not None else None
    failure = quality.failure if quality is not None else None
    n_frames = len(quality.frames) if quality is not None else 0
    for column, task in QUALITY_TASKS.items():
        if failure is not None:
            out[column] = MetricResult.missing(f"Q-Align failed: {failure}")
        elif ratings is None or task not in ratings.logits:
            out[column] = MetricResult.not_applicable(NO_QALIGN)
        else:
            logits = ratings.logits[task]
            x = rating_score(logits)
            out[column] = MetricResult.official(
                x,
                normalize_rating(x),
                {"backend": ratings.backend, "frames_1fps": n_frames, "rating_logits": logits},
            )
    for name, task in DRIFT_METRICS.items():
        if ratings is not None and task in ratings.segment_logits:
            scores = [rating_score(seg) for seg in ratings.segment_logits[task]]
            out[name] = rollout_drift(
                scores, {"backend": ratings.backend, "task": task, "frames_1fps": n_frames}
            )
        elif failure is not None:
            out[name] = MetricResult.missing(f"Q-Align failed: {failure}")
        elif name == "rollout_imaging_drift":
            out[name] = _sharpness_drift(statistics)
        else:
            out[name] = MetricResult.not_applicable(NO_AESTHETIC_BACKEND)
    return out


def quality_scores(inp: ScoringInput) -> dict[str, MetricResult]:
    """Q-Align columns, the quality drift (WorldAtlas) and the CPU imaging statistics
    (``quality_metrics``)."""
    return quality_metrics(inp.cache.quality, inp.cache.fps)

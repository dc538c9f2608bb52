"""Quality results from hand-built caches: which backend each drift uses, and the statuses."""

from __future__ import annotations

import numpy as np
import pytest

from streameval.core.episode.quality import QualityCache, QualityRatings
from streameval.metrics.quality.episode import NO_QALIGN, quality_metrics
from streameval.metrics.quality.imaging import STAT_FIELDS, STATISTIC_METRICS
from streameval.metrics.quality.kernels import normalize_rating, rating_score


def stats_with_sharpness(values: list[float]) -> np.ndarray:
    rows = np.full((len(values), len(STAT_FIELDS)), np.nan)
    rows[:, STAT_FIELDS.index("sharpness")] = values
    rows[:, STAT_FIELDS.index("noise")] = 1.0
    rows[:, STAT_FIELDS.index("exposure")] = 100.0
    rows[:, STAT_FIELDS.index("clipping")] = 0.0
    rows[:, STAT_FIELDS.index("colourfulness")] = 20.0
    return rows


def test_no_cache_at_all() -> None:
    out = quality_metrics(None, 16.0)
    assert out["perceptual_quality"].status == "not_applicable"
    assert out["perceptual_quality"].reason == NO_QALIGN
    assert out["rollout_imaging_drift"].status == "not_applicable"
    assert out["rollout_aesthetic_drift"].status == "not_applicable"
    assert all(out[n].status == "missing" for n in STATISTIC_METRICS)


def test_constant_sharpness_has_zero_drift_on_the_cpu_backend() -> None:
    out = quality_metrics(QualityCache(statistics=stats_with_sharpness([0.2] * 400)), 16.0)
    drift = out["rollout_imaging_drift"]
    assert drift.status == "official" and drift.raw == 0.0 and drift.normalized == 100.0
    assert drift.details["backend"] == "cpu-sharpness" and drift.details["frames"] == 300
    assert out["rollout_aesthetic_drift"].status == "not_applicable"


def test_sharpness_decline_drift_by_hand() -> None:
    # 10 frames, one per segment: best 1.0, worst 0.1 -> (1.0 - 0.1) / 1.0
    values = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]
    drift = quality_metrics(QualityCache(statistics=stats_with_sharpness(values)), 16.0)[
        "rollout_imaging_drift"
    ]
    assert drift.raw == pytest.approx(0.9) and drift.normalized == pytest.approx(10.0)
    # frames without a sharpness measurement (light rows) are skipped, not read as 0
    sparse = stats_with_sharpness([v for v in values for _ in range(4)])
    sparse[1::4, STAT_FIELDS.index("sharpness")] = np.nan
    again = quality_metrics(QualityCache(statistics=sparse), 16.0)["rollout_imaging_drift"]
    assert again.raw == pytest.approx(0.9)


def test_too_few_frames_for_drift() -> None:
    out = quality_metrics(QualityCache(statistics=stats_with_sharpness([0.3] * 9)), 16.0)
    assert out["rollout_imaging_drift"].status == "not_applicable"
    assert "drift needs 10" in (out["rollout_imaging_drift"].reason or "")


def test_qalign_answers_drive_columns_and_both_drifts() -> None:
    whole = {"quality": [3.0, 1.0, 0.0, -1.0, -2.0], "aesthetics": [0.0, 0.0, 2.0, 0.0, 0.0]}
    segments = {
        "quality": [[float(k), 0.0, 0.0, 0.0, 0.0] for k in range(10)],
        "aesthetics": [[1.0, 1.0, 1.0, 1.0, 1.0]] * 10,
    }
    cache = QualityCache(
        {i * 16: np.zeros((4, 4, 3), np.uint8) for i in range(12)},
        stats_with_sharpness([0.2] * 192),
        QualityRatings("qalign(test)", whole, segments),
    )
    out = quality_metrics(cache, 16.0)
    x = rating_score(whole["quality"])
    assert out["perceptual_quality"].raw == x
    assert out["perceptual_quality"].normalized == normalize_rating(x)
    assert out["aesthetic_quality"].normalized == pytest.approx(50.0)
    imaging = out["rollout_imaging_drift"]
    scores = [rating_score(s) for s in segments["quality"]]
    assert imaging.details["backend"] == "qalign(test)"  # Q-Align, not the CPU statistic
    assert imaging.raw == pytest.approx((max(scores) - min(scores)) / max(scores))
    assert out["rollout_aesthetic_drift"].raw == 0.0  # a constant answer: no drift


def test_a_failed_backend_makes_quality_missing() -> None:
    cache = QualityCache(statistics=stats_with_sharpness([0.2] * 50), failure="out of memory")
    out = quality_metrics(cache, 16.0)
    for name in ("perceptual_quality", "aesthetic_quality", "rollout_imaging_drift"):
        assert out[name].status == "missing" and "out of memory" in (out[name].reason or "")
    assert out["imaging_sharpness"].status == "official"

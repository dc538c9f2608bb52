"""Helpers shared by the metric tests (imported as ``tests.metrics.helpers``)."""

from __future__ import annotations

from typing import Any

from streameval.core.metric_result import MetricResult
from streameval.metrics import aggregation as aggregations


def model_value(aggregation: str, details: list[dict[str, Any]]) -> float:
    """The model-level value the leaderboard reports for these official episodes' details
    (the one home of the model formulas: ``streameval.metrics.aggregation``)."""
    measured = [MetricResult.official(0.0, 0.0, d) for d in details]
    result = getattr(aggregations, aggregation)(measured, 0)
    assert result.method != "episode_mean_fallback", "details unusable by the aggregator"
    return float(result.value)

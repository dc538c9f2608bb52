"""The scores of one episode: every metric's result and every fitted segment's motion type.

Made by ``engine/scoring.py`` (the single path shared by live, replay and rescore), carried to
the observers in an ``EpisodeOutcome`` (``core/observers.py``) and written to ``scores.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streameval.core.episode.motion import MotionFit
from streameval.core.metric_result import MetricResult


@dataclass(frozen=True, slots=True)
class EpisodeScores:
    """``metrics`` by metric name, in registry order; ``motion_fits`` by segment index (None:
    the segment could not be fitted)."""

    metrics: dict[str, MetricResult]
    motion_fits: dict[int, MotionFit | None]

    def motion_types_json(self) -> list[dict[str, Any]]:
        return [
            {"segment": j, **(fit.to_json() if fit else {"status": "no_fit"})}
            for j, fit in sorted(self.motion_fits.items())
        ]

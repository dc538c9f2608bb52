"""Typed result schema: one metric result, with status and reason (docs/methods.md#statuses)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["official", "not_applicable", "missing"]


@dataclass(frozen=True, slots=True)
class MetricResult:
    """One metric of one episode.

    ``raw`` is the metric in its own units, ``normalized`` the master-table value in [0, 100]
    (higher is better). Both are None unless ``status`` is ``official``; a non-official result
    always carries a ``reason``. not_applicable and missing are never imputed.
    """

    raw: float | None
    normalized: float | None
    status: Status
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def official(
        cls, raw: float, normalized: float, details: dict[str, Any] | None = None
    ) -> MetricResult:
        return cls(float(raw), float(normalized), "official", None, details or {})

    @classmethod
    def statistic(
        cls, raw: float, unit: str, details: dict[str, Any] | None = None
    ) -> MetricResult:
        """A measured statistic in its own ``unit`` (e.g. imaging sharpness): official, but
        with no ``normalized`` value, because it is no master-table column and any [0, 100]
        mapping of it would be invented."""
        return cls(float(raw), None, "official", None, {"unit": unit, **(details or {})})

    @classmethod
    def not_applicable(cls, reason: str, details: dict[str, Any] | None = None) -> MetricResult:
        return cls(None, None, "not_applicable", reason, details or {})

    @classmethod
    def missing(cls, reason: str, details: dict[str, Any] | None = None) -> MetricResult:
        return cls(None, None, "missing", reason, details or {})

    def to_json(self) -> dict[str, Any]:
        return {
            "raw": self.raw,
            "normalized": self.normalized,
            "status": self.status,
            "reason": self.reason,
            "details": self.details,
        }

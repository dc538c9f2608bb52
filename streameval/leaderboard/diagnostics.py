"""Diagnostics beside the master table: the registered metrics that are no column.

Imaging statistics, rollout drift (WorldAtlas, docs/methods.md#rollout_imaging_drift), the wall-time
interactivity figures, the real-time metrics (docs/methods.md#real-time-metrics) and the like
are measured in their own units (grey levels, ms, a ratio), so a [0, 100] column of them would
be invented, and ranking them would say "better" where no common scale defines it (more
colourful is not better). They are still what a researcher compares across models, so
``table --diagnostics`` shows, per model, the mean of each one's official raw values over the
episodes the table counts (complete ones unless ``include_incomplete``), with how many episodes
measured it. Which metrics appear comes from
the registry (``MetricSpec.column`` False), in registration order, and only those some episode
reported: a new non-column metric needs no change here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streameval.leaderboard.cells import effective_result
from streameval.leaderboard.table import MasterTable, ModelRow
from streameval.metrics.registry import MetricSpec, metric_spec, metric_specs


@dataclass(frozen=True, slots=True)
class DiagnosticCell:
    """The mean raw value of one metric over one model's ``measured`` of ``total`` episodes
    (None when no episode measured it; ``reason`` then says why, from the first episode)."""

    mean: float | None
    measured: int
    total: int
    unit: str
    reason: str | None = None
    normalized: float | None = None
    """The mean normalized value of a metric on WorldAtlas's [0, 1] scale (the real-time
    metrics, docs/methods.md#real-time-metrics): shown first, with 4 decimals, as published."""

    def to_json(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "measured": self.measured,
            "total": self.total,
            "unit": self.unit,
            "reason": self.reason,
            "normalized": self.normalized,
        }

    def text(self) -> str:
        """``0.1234 px (3/4)``, ``0.6240 · 0.376 s`` on the unit scale; ``n/a`` with no
        measurement."""
        if self.mean is None:
            return "n/a"
        unit = f" {self.unit}" if self.unit else ""
        coverage = f" ({self.measured}/{self.total})" if self.measured != self.total else ""
        score = f"{self.normalized:.4f} · " if self.normalized is not None else ""
        return f"{score}{self.mean:.4g}{unit}{coverage}"


@dataclass(frozen=True, slots=True)
class Diagnostics:
    """Per model (included rows, then excluded ones) one cell per diagnostic metric."""

    metrics: tuple[MetricSpec, ...]
    rows: tuple[tuple[str, dict[str, DiagnosticCell]], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "metrics": [
                {"name": s.name, "label": s.label, "family": s.family} for s in self.metrics
            ],
            "rows": [
                {"model": model, "cells": {k: c.to_json() for k, c in cells.items()}}
                for model, cells in self.rows
            ],
        }


def diagnostic_cell(row: ModelRow, name: str, include_incomplete: bool = False) -> DiagnosticCell:
    """The mean of ``name``'s official, finite raw values over ``row``'s episodes; a figure
    registered without a kernel (interactivity) is read from the episodes' own block."""
    spec = metric_spec(name)
    if spec.kernel is None:
        return _figure_cell(row, spec, include_incomplete)
    values: list[float] = []
    scores: list[float] = []
    unit = spec.unit
    reason: str | None = None
    for record in row.episodes:
        result = effective_result(record, name, include_incomplete)
        if result.status == "official" and result.raw is not None and math.isfinite(result.raw):
            values.append(result.raw)
            if result.normalized is not None and math.isfinite(result.normalized):
                scores.append(result.normalized)
            unit = unit or str(result.details.get("unit", ""))
        elif reason is None:
            reason = result.reason
    mean = math.fsum(values) / len(values) if values else None
    # only where the registry puts the metric on the unit scale: other non-columns have none
    score = math.fsum(scores) / len(scores) if spec.scale <= 1.0 and scores else None
    return DiagnosticCell(
        mean, len(values), row.n_episodes, unit, None if values else reason, score
    )


def _figure_cell(row: ModelRow, spec: MetricSpec, include_incomplete: bool) -> DiagnosticCell:
    values = [
        record.interactivity[spec.name]
        for record in row.episodes
        if (record.complete or include_incomplete) and spec.name in record.interactivity
    ]
    mean = math.fsum(values) / len(values) if values else None
    reason = None if values else f"no episode measured {spec.name}"
    return DiagnosticCell(mean, len(values), row.n_episodes, spec.unit, reason)


def diagnostics(table: MasterTable, specs: Sequence[MetricSpec] | None = None) -> Diagnostics:
    """The diagnostics of ``table``'s models: ``specs`` None = every registered non-column
    metric that at least one of the table's episodes reported."""
    rows = (*table.rows, *(e.row for e in table.excluded))
    if specs is None:
        reported = {
            name
            for row in rows
            for record in row.episodes
            for name in (*record.metrics, *record.interactivity)
        }
        specs = [s for s in metric_specs(column=False) if s.name in reported]
    cells = tuple(
        (row.model, {s.name: diagnostic_cell(row, s.name, table.include_incomplete) for s in specs})
        for row in rows
    )
    return Diagnostics(tuple(specs), cells)

"""Master-table columns, read from the metric registry at call time.

A column is a registered metric with ``column=True`` (``metrics/registry.py``), in registration
order; a metric registered later (a test's toy metric, another issue's family) appears in
``table``, the dashboard and the report without touching this package.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from streameval.leaderboard.aggregators import Aggregator, episode_mean
from streameval.metrics.registry import (
    MetricSpec,
    UnknownMetricError,
    metric_spec,
    metric_specs,
    resolve_target,
)


@dataclass(frozen=True, slots=True)
class Column:
    """One master-table column: metric name (DESIGN §5), display label, a short header and
    the metric's family (``control``, ``memory``, ``quality``, ``worldatlas``, ...).

    Every column is higher-is-better in [0, 100] (seed 000 "Final reporting").
    """

    name: str
    label: str
    short: str
    group: str

    @classmethod
    def from_spec(cls, spec: MetricSpec) -> Column:
        return cls(spec.name, spec.label, spec.header, spec.family)


def table_columns() -> tuple[Column, ...]:
    """Every registered column metric, in registration order."""
    return tuple(Column.from_spec(s) for s in metric_specs(column=True))


def column_names() -> tuple[str, ...]:
    return tuple(c.name for c in table_columns())


def column_by_name(name: str, columns: Sequence[Column] | None = None) -> Column:
    """The column called ``name``; a ``KeyError`` listing the known names otherwise."""
    columns = table_columns() if columns is None else columns
    for column in columns:
        if column.name == name:
            return column
    raise KeyError(f"unknown column {name!r}; known: {', '.join(c.name for c in columns)}")


def aggregator_for(name: str) -> Aggregator:
    """The registered aggregation of metric ``name``; the episode mean for an unregistered
    name (a metric found in a scores.json written by another version)."""
    try:
        spec = metric_spec(name)
    except UnknownMetricError:
        return episode_mean
    found: Aggregator = resolve_target(spec.aggregation)
    return found

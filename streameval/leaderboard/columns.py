"""Master-table columns, read from the metric registry at call time.

A column is a registered metric with ``column=True`` (``metrics/registry.py``), in registration
order; a metric registered later (a test's toy metric, another family) appears in
``table``, the dashboard and the report without touching this package. A metric registered for
some suites only (``MetricSpec.suites``: the WorldAtlas columns, memory_loop) is a column of a
table whose results hold an episode of one of them, and its cells count those episodes alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from streameval.errors import UnknownMetricError
from streameval.metrics.aggregation import Aggregator, episode_mean
from streameval.metrics.registry import MetricSpec, metric_spec, metric_specs


@dataclass(frozen=True, slots=True)
class Column:
    """One master-table column: metric name (docs/cli.md#results-directory), display label, a short
    header and
    the metric's family (``control``, ``memory``, ``quality``, ``worldatlas``, ...).

    Every column is higher-is-better on its metric's scale (``metric_scale``: [0, 100] as
    WorldMark reports, [0, 1] for WorldAtlas's metrics). ``suites``:
    the suites it is defined for (empty: all).
    """

    name: str
    label: str
    short: str
    group: str
    suites: tuple[str, ...] = ()

    @classmethod
    def from_spec(cls, spec: MetricSpec) -> Column:
        return cls(spec.name, spec.label, spec.header, spec.family, spec.suites)


def table_columns(suites: Iterable[str] = (), *, every_suite: bool = False) -> tuple[Column, ...]:
    """The registered column metrics, in registration order: those of every suite
    (WorldMark's master table) plus those defined for one of ``suites``; ``every_suite``: all."""
    present = set(suites)
    return tuple(
        Column.from_spec(s)
        for s in metric_specs(column=True)
        if every_suite or not s.suites or present & set(s.suites)
    )


def column_names(suites: Iterable[str] = (), *, every_suite: bool = False) -> tuple[str, ...]:
    return tuple(c.name for c in table_columns(suites, every_suite=every_suite))


def metric_suites(name: str) -> tuple[str, ...]:
    """The suites metric ``name`` is defined for; empty for every suite, and for a name that
    is not registered (a file written by another version)."""
    try:
        return metric_spec(name).suites
    except UnknownMetricError:
        return ()


def metric_scale(name: str) -> tuple[float, int]:
    """``(MetricSpec.scale, MetricSpec.decimals)`` of ``name``; 0–100 with 2 decimals when
    unregistered (a file written by another version)."""
    try:
        spec = metric_spec(name)
    except UnknownMetricError:
        return 100.0, 2
    return spec.scale, spec.decimals


def unmeasured_is_missing(name: str) -> bool:
    """``MetricSpec.unmeasured_is_missing`` of ``name`` (False when unregistered)."""
    try:
        return metric_spec(name).unmeasured_is_missing
    except UnknownMetricError:
        return False


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
        return metric_spec(name).aggregation
    except UnknownMetricError:
        return episode_mean

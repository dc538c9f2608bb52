"""Drill-down: a model's episodes, and an episode's segments (the control metrics'
``details["segments"]``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from streameval.inputs.numbers import finite_float
from streameval.leaderboard.cells import Cell, episode_cell
from streameval.leaderboard.table import MasterTable
from streameval.metrics.registry import metric_names
from streameval.results.scores_file import EpisodeRecord


@dataclass(frozen=True, slots=True)
class EpisodeRow:
    """One episode of a model with its per-episode cells (normalized values, statuses)."""

    record: EpisodeRecord
    cells: Mapping[str, Cell]


def model_episodes(table: MasterTable, model: str) -> list[EpisodeRow]:
    """Drill-down model → episodes, for included and excluded models alike."""
    row = table.row(model)
    return [
        EpisodeRow(
            record,
            {c.name: episode_cell(record, c.name, table.include_incomplete) for c in table.columns},
        )
        for record in row.episodes
    ]


@dataclass(frozen=True, slots=True)
class SegmentRow:
    """One segment (or key switch, for latency) of a control column in one episode.

    ``value`` is the segment's own score: accuracy in [−1, 1], the others in [0, 1]; None unless
    ``status`` is ``scored``. ``details`` holds the rest of the entry (kernel internals).
    """

    column: str
    index: int | None
    key: str | None
    family: str | None
    start_frame: int | None
    end_frame: int | None
    status: str
    value: float | None
    reason: str | None
    details: Mapping[str, Any] = field(default_factory=dict)


_SEGMENT_FIELDS = frozenset(
    {"index", "key", "family", "start_frame", "end_frame", "status", "value", "reason"}
)


def _optional_int(x: object) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _optional_str(x: object) -> str | None:
    return x if isinstance(x, str) else None


def episode_segments(record: EpisodeRecord, column: str | None = None) -> list[SegmentRow]:
    """Drill-down episode → segments, from the control metrics' ``details["segments"]``.

    ``column`` None = every control column in table order. Columns without segment details
    (non-control metrics, older files) contribute nothing.
    """
    names = metric_names(family="control") if column is None else (column,)
    rows: list[SegmentRow] = []
    for name in names:
        result = record.metrics.get(name)
        segments = result.details.get("segments") if result is not None else None
        if not isinstance(segments, list):
            continue
        for entry in segments:
            if not isinstance(entry, dict):
                continue
            rows.append(
                SegmentRow(
                    column=name,
                    index=_optional_int(entry.get("index")),
                    key=_optional_str(entry.get("key")),
                    family=_optional_str(entry.get("family")),
                    start_frame=_optional_int(entry.get("start_frame")),
                    end_frame=_optional_int(entry.get("end_frame")),
                    status=str(entry.get("status", "unknown")),
                    value=finite_float(entry.get("value")),
                    reason=_optional_str(entry.get("reason")),
                    details={k: v for k, v in entry.items() if k not in _SEGMENT_FIELDS},
                )
            )
    return rows

"""A case's ``scores.json`` as the dashboard's case-set view reads it: fast, and kept until
the file changes (a running case run's folder is read again every few seconds), into the record
the table reads (``results.scores_file.episode_from_document``), so the view's values and
bands are the table's."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from streameval.core.metric_result import MetricResult
from streameval.errors import BadInputError
from streameval.inputs.jsonfile import read_json_file
from streameval.results.scores_file import (
    READABLE_FORMATS,
    SCORES_FORMAT,
    EpisodeRecord,
    episode_from_document,
    load_episode,
)


def case_values(metrics: Mapping[str, MetricResult], complete: bool) -> dict[str, float]:
    """The column values one case gives: every official normalized result of a complete case
    (an incomplete case is not the episode the suite asked for, as the table counts it)."""
    if not complete:
        return {}
    return {
        name: float(result.normalized)
        for name, result in metrics.items()
        if result.status == "official"
        and result.normalized is not None
        and math.isfinite(result.normalized)
    }


@dataclass(frozen=True, slots=True)
class CaseScores:
    """What the case-set view reads of one case's ``scores.json``."""

    key: str
    set: str
    complete: bool
    values: Mapping[str, float]
    record: EpisodeRecord | None = None


_READ: dict[Path, tuple[tuple[int, int], CaseScores | None]] = {}
"""Case scores read so far, by file and (mtime, size): a folder read again every few seconds
reads only the files that changed."""
_READ_LIMIT = 100_000


def read_case_scores(path: Path) -> CaseScores | None:
    """A case's ``scores.json`` as the view needs it; None for a file that is not one (no
    ``case`` record, unreadable, another format). The current format is read without the
    schema check ``load_episode`` makes (60 ms a file: a 500-case folder read every few
    seconds could not afford it) but into the same record (``episode_from_document``), so
    the values and bands are the table's. An older format goes through ``load_episode``,
    which rescales it."""
    try:
        stat = path.stat()
    except OSError:
        return None
    stamp = (stat.st_mtime_ns, stat.st_size)
    known = _READ.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    if len(_READ) >= _READ_LIMIT:
        _READ.clear()
    scores = _read_case_scores(path)
    _READ[path] = (stamp, scores)
    return scores


def read_case_record(path: Path) -> EpisodeRecord | None:
    """A case's record as ``read_case_scores`` reads it: ``leaderboard.intervals``' reader
    for the dashboard."""
    scores = read_case_scores(path)
    return None if scores is None else scores.record


def _read_case_scores(path: Path) -> CaseScores | None:
    try:
        doc = read_json_file(path)
    except BadInputError:
        return None
    if not isinstance(doc, dict) or doc.get("format") not in READABLE_FORMATS:
        return None
    case = doc.get("case")
    if not isinstance(case, dict):
        return None
    name, set_name = case.get("name"), case.get("set")
    if not isinstance(name, str) or not isinstance(set_name, str):
        return None
    try:
        if doc["format"] != SCORES_FORMAT:
            record = load_episode(path)
        else:
            record = episode_from_document(doc, path)
    except BadInputError:
        return None
    return CaseScores(
        f"{set_name}/{name}",
        set_name,
        record.complete,
        case_values(record.metrics, record.complete),
        record,
    )

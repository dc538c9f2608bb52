"""A case run's progress as the dashboard shows it: plain data, no widgets, no asyncio.

A benchmark run (``--cases``) takes its cases one by one in a seeded random order
(``OUT/<model>/cases.json`` records the order and the sets' sizes). After every case the
dashboard says, per set, how many cases are done and left and the running mean of each column,
how long a case takes and about how long the rest will take; and for each column over the whole
case set the running value with its anytime-valid band
(``streameval.metrics.anytime.confidence_sequence``): where the full-set value can still land,
valid however often the run is looked at.

The band here is on the mean of the per-case values (a case's normalized result, official and
complete only) — what the dashboard can know from the episodes it saw. ``streameval table``
pools some columns over segments, so its final value can differ slightly from the band's
end point; the table's own intervals are ``table --ci``'s.

The same ``CaseProgress`` is built from a live run (``DashboardModel``'s ended episodes plus
the cases a resumed run kept from before) and from a results folder on disk (``cases.json``
and the cases' ``scores.json``), and from the scores a remote evaluator publishes.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from streameval.replay.layout import CASE_RUN

from streameval.core.metric_result import MetricResult
from streameval.errors import BadInputError
from streameval.inputs.jsonfile import read_json_file
from streameval.leaderboard.columns import column_names, metric_scale
from streameval.metrics.anytime import DEFAULT_CONFIDENCE, confidence_sequence
from streameval.results.scores_file import (
    READABLE_FORMATS,
    SCORES_FORMAT,
    find_scores_files,
    load_episode,
)

CASE_RUN_DEPTH = 4
"""How many folders above a case's results a ``cases.json`` is looked for: ``OUT/<model>/
<set>/<case>`` with a set of up to three components (``first_view/real`` is two)."""


@dataclass(frozen=True, slots=True)
class CaseEntry:
    """One case that ended: its set, whether it ran to the end, its column values (the
    normalized official results of a complete case; none for an incomplete one) and how many
    seconds it took (None when not known, e.g. a case a resumed run kept)."""

    key: str
    set: str
    complete: bool
    values: Mapping[str, float]
    seconds: float | None = None


@dataclass(frozen=True, slots=True)
class SetProgress:
    """One set of the case run: cases ended (``done`` complete, ``incomplete``), left, and
    the running mean of each column over its complete cases."""

    name: str
    total: int
    done: int
    incomplete: int
    means: Mapping[str, float]

    @property
    def left(self) -> int:
        return max(0, self.total - self.done - self.incomplete)


@dataclass(frozen=True, slots=True)
class ColumnBand:
    """A column's running value over the whole case set and its anytime-valid band, after
    ``cases`` of the ``of`` cases that can still give it a value."""

    name: str
    value: float
    low: float
    high: float
    cases: int
    of: int
    decimals: int

    def figures(self) -> str:
        """``97.1 [95.4, 98.2] after 41 of 125``."""
        d = self.decimals
        return (
            f"{self.value:.{d}f} [{self.low:.{d}f}, {self.high:.{d}f}] "
            f"after {self.cases} of {self.of}"
        )

    def text(self) -> str:
        """``direction_accuracy_trans 97.1 [95.4, 98.2] after 41 of 125``."""
        return f"{self.name} {self.figures()}"


@dataclass(frozen=True, slots=True)
class CaseProgress:
    """The whole case run: per set, per column, and the time it takes."""

    total: int
    sets: tuple[SetProgress, ...]
    bands: tuple[ColumnBand, ...]
    seconds_per_case: float | None
    running: str | None = None
    confidence: float = DEFAULT_CONFIDENCE
    stop: str | None = None  # how a stop rule ended the run, when cases.json records it

    @property
    def ended(self) -> int:
        return sum(s.done + s.incomplete for s in self.sets)

    @property
    def done(self) -> int:
        return sum(s.done for s in self.sets)

    @property
    def incomplete(self) -> int:
        return sum(s.incomplete for s in self.sets)

    @property
    def left(self) -> int:
        return max(0, self.total - self.ended)

    @property
    def seconds_left(self) -> float | None:
        """The cases left × the mean time a case took; None before a timed case ended."""
        if self.seconds_per_case is None:
            return None
        return self.left * self.seconds_per_case

    def summary(self) -> str:
        """``cases 41/125 · 2 incomplete · 82 left · 38 s a case · about 52 min left``."""
        parts = [f"cases {self.ended}/{self.total}"]
        if self.incomplete:
            parts.append(f"{self.incomplete} incomplete")
        parts.append(f"{self.left} left")
        if self.seconds_per_case is not None:
            parts.append(f"{format_duration(self.seconds_per_case)} a case")
            if self.left:
                parts.append(f"about {format_duration(self.seconds_left or 0.0)} left")
        return " · ".join(parts)


def format_duration(seconds: float) -> str:
    """``38 s``, ``12 min``, ``3 h 05 min``: a human's precision for a waiting time."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


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


def _column_order(names: Iterable[str]) -> list[str]:
    """Table columns in the table's order; names the table does not know are left out (a
    diagnostic figure is no column)."""
    present = set(names)
    return [name for name in column_names(every_suite=True) if name in present]


def case_progress(
    entries: Sequence[CaseEntry],
    set_totals: Mapping[str, int],
    *,
    running: str | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    stop: str | None = None,
) -> CaseProgress:
    """The progress of a case run whose ended cases are ``entries``, in run order.

    ``set_totals`` is every set's number of cases (``cases.json``'s ``sets``); a set seen in
    ``entries`` but not there counts its ended cases. A column's band is over the cases that
    can still give it a value: all cases but those that ended without one.
    """
    totals = dict(set_totals)
    for entry in entries:
        totals.setdefault(entry.set, 0)
    ended_in = {name: [e for e in entries if e.set == name] for name in totals}
    sets = []
    for name, total in totals.items():
        mine = ended_in[name]
        means = {
            column: statistics.fmean(e.values[column] for e in mine if column in e.values)
            for column in _column_order(c for e in mine for c in e.values)
        }
        complete = sum(1 for e in mine if e.complete)
        sets.append(SetProgress(name, max(total, len(mine)), complete, len(mine) - complete, means))
    total = sum(s.total for s in sets)
    bands = tuple(
        band
        for column in _column_order(c for e in entries for c in e.values)
        if (band := column_band(column, entries, total, confidence)) is not None
    )
    timed = [e.seconds for e in entries if e.seconds is not None]
    per_case = statistics.fmean(timed) if timed else None
    return CaseProgress(total, tuple(sets), bands, per_case, running, confidence, stop)


def column_band(
    column: str, entries: Sequence[CaseEntry], total: int, confidence: float = DEFAULT_CONFIDENCE
) -> ColumnBand | None:
    """``column``'s running mean and band after ``entries`` (None: no value yet)."""
    values = [e.values[column] for e in entries if column in e.values]
    if not values:
        return None
    scale, decimals = metric_scale(column)
    without = sum(1 for e in entries if column not in e.values)
    population = max(len(values), total - without)
    clipped = tuple(min(scale, max(0.0, v)) for v in values)
    low, high = last_interval(clipped, population, confidence, scale)
    return ColumnBand(
        column,
        statistics.fmean(values),
        low,
        high,
        len(values),
        population,
        1 if scale >= 100 else min(decimals, 3),
    )


@functools.lru_cache(maxsize=512)
def last_interval(
    values: tuple[float, ...], population: int, confidence: float, scale: float
) -> tuple[float, float]:
    """The band after the last of ``values``; kept, since a folder read again every few
    seconds mostly asks for the same bands (30 ms a column at 400 cases)."""
    low, high = confidence_sequence(values, population, confidence, bounds=(0.0, scale))
    return float(low[-1]), float(high[-1])


# -- a case run on disk --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CaseRunFile:
    """``OUT/<model>/cases.json``, as far as the dashboard reads it."""

    path: Path
    model: str
    order: tuple[str, ...]
    sets: Mapping[str, int]
    written_at: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def model_dir(self) -> Path:
        return self.path.parent

    @property
    def total(self) -> int:
        return sum(self.sets.values()) or len(self.order)


def read_case_run(path: Path) -> CaseRunFile:
    """Read a ``cases.json``; a file that is not one is ``BadInputError``."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadInputError(path, f"cannot read the case run record: {exc}") from None
    if not isinstance(doc, dict):
        raise BadInputError(path, "a case run record is a JSON object")
    order = doc.get("order")
    sets = doc.get("sets")
    if not isinstance(order, list) or not all(isinstance(k, str) for k in order):
        raise BadInputError(path, "its 'order' is not a list of case keys")
    if not isinstance(sets, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in sets.items()
    ):
        raise BadInputError(path, "its 'sets' is not an object of case counts")
    written = doc.get("written_at")
    when: float | None = None
    if isinstance(written, str):
        try:
            when = datetime.fromisoformat(written).timestamp()
        except ValueError:
            when = None
    model = doc.get("model")
    return CaseRunFile(
        path, model if isinstance(model, str) else path.parent.name, tuple(order), sets, when, doc
    )


def find_case_runs(path: Path) -> list[Path]:
    """Every ``cases.json`` at or below ``path`` (a results folder, a model's folder), or the
    one above ``path`` when ``path`` is inside a case run (a case's folder)."""
    if path.is_file():
        return [path] if path.name == CASE_RUN else []
    below = sorted(path.rglob(CASE_RUN))
    if below:
        return below
    above = case_run_above(path)
    return [] if above is None else [above]


def case_run_above(results_dir: Path) -> Path | None:
    """The ``cases.json`` of the case run ``results_dir`` (a case's folder) belongs to."""
    for parent in list(results_dir.parents)[:CASE_RUN_DEPTH]:
        candidate = parent / CASE_RUN
        if candidate.is_file():
            return candidate
    return None


@dataclass(frozen=True, slots=True)
class CaseScores:
    """What the case-set view reads of one case's ``scores.json``."""

    key: str
    set: str
    complete: bool
    values: Mapping[str, float]


_READ: dict[Path, tuple[tuple[int, int], CaseScores | None]] = {}
"""Case scores read so far, by file and (mtime, size): a folder read again every few seconds
reads only the files that changed."""
_READ_LIMIT = 100_000


def read_case_scores(path: Path) -> CaseScores | None:
    """A case's ``scores.json`` as the view needs it; None for a file that is not one (no
    ``case`` record, unreadable, another format). The current format is read without the
    schema check ``load_episode`` makes (60 ms a file: a 500-case folder read every few
    seconds could not afford it): only the case, ``complete`` and each metric's status and
    normalized value are taken, with the table's rule (an official result counts with a finite
    normalized value). An older format goes through ``load_episode``, which rescales it."""
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
    if doc["format"] != SCORES_FORMAT:
        try:
            record = load_episode(path)
        except BadInputError:
            return None
        return CaseScores(
            f"{set_name}/{name}",
            set_name,
            record.complete,
            case_values(record.metrics, record.complete),
        )
    complete = doc.get("complete", True) is True
    metrics = doc.get("metrics")
    values: dict[str, float] = {}
    if complete and isinstance(metrics, dict):
        for metric, entry in metrics.items():
            if not isinstance(entry, dict) or entry.get("status") != "official":
                continue
            value = entry.get("normalized")
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if math.isfinite(value):
                values[str(metric)] = float(value)
    return CaseScores(f"{set_name}/{name}", set_name, complete, values)


def recorded_entries(run: CaseRunFile) -> list[CaseEntry]:
    """The ended cases of a case run on disk, in the order they ended (the run's order,
    resumed), each from its ``scores.json``.

    A case's time is the gap between its scores.json and the one before (the first: since
    ``cases.json`` was written); a gap of a resumed run's pause is no case's time, so gaps
    over five times the median are left out.
    """
    found: dict[str, tuple[CaseScores, float]] = {}
    for path in find_scores_files(run.model_dir) if run.model_dir.is_dir() else []:
        scores = read_case_scores(path)
        if scores is None:
            continue
        with contextlib.suppress(OSError):
            found[scores.key] = (scores, path.stat().st_mtime)
    rank = {key: i for i, key in enumerate(run.order)}
    ordered = sorted(found.values(), key=lambda pair: (pair[1], rank.get(pair[0].key, -1)))
    gaps: list[float | None] = []
    before = run.written_at
    for _, mtime in ordered:
        gaps.append(None if before is None else max(0.0, mtime - before))
        before = mtime
    known = [g for g in gaps if g is not None]
    limit = 5 * statistics.median(known) if known else math.inf
    return [
        CaseEntry(
            scores.key,
            scores.set,
            scores.complete,
            scores.values,
            gap if gap is not None and gap <= limit else None,
        )
        for (scores, _), gap in zip(ordered, gaps, strict=True)
    ]


def stop_note(doc: Mapping[str, Any]) -> str | None:
    """How a stop rule ended the run (``cases.json``'s ``stopped``: ``rule``, ``after``,
    ``not_run``), in words; None when the record has none or one this reader cannot read."""
    stopped = doc.get("stopped")
    if not isinstance(stopped, dict):
        return None
    rule, after, not_run = stopped.get("rule"), stopped.get("after"), stopped.get("not_run")
    if not isinstance(rule, str) or not isinstance(after, int):
        return None
    text = f"stopped by --stop-when {rule!r} after {after} cases"
    if isinstance(not_run, list):
        text += f"; {len(not_run)} not run (--resume without --stop-when runs them)"
    return text


def progress_of(run: CaseRunFile, confidence: float = DEFAULT_CONFIDENCE) -> CaseProgress:
    """The progress of a case run on disk, its stop rule's end included."""
    return case_progress(
        recorded_entries(run), run.sets, confidence=confidence, stop=stop_note(run.extra)
    )


def progress_on_disk(path: Path, confidence: float = DEFAULT_CONFIDENCE) -> CaseProgress:
    """The progress of the case run recorded by the ``cases.json`` at ``path``."""
    return progress_of(read_case_run(path), confidence)


@dataclass
class CaseBoard:
    """The case run of a live command: every set's size and the cases it ended before this
    command (a resumed run keeps its finished cases and does not run them again).

    ``for_jobs`` builds it from the command's jobs: the sets' sizes from ``cases.json`` when
    the run was started before, else from the jobs themselves.
    """

    set_totals: dict[str, int]
    kept: list[CaseEntry] = field(default_factory=list)
    confidence: float = DEFAULT_CONFIDENCE

    @classmethod
    def for_cases(
        cls, cases: Sequence[tuple[str, str] | None], results_dirs: Sequence[Path]
    ) -> CaseBoard | None:
        """``cases`` are the jobs' ``(set, name)`` (None: a job that runs no case), in run
        order, ``results_dirs`` their folders; None when no job runs a case."""
        keys = {f"{c[0]}/{c[1]}" for c in cases if c is not None}
        if not keys:
            return None
        totals: dict[str, int] = {}
        for case in cases:
            if case is not None:
                totals[case[0]] = totals.get(case[0], 0) + 1
        found = next(
            (
                path
                for case, folder in zip(cases, results_dirs, strict=True)
                if case is not None and (path := case_run_above(folder)) is not None
            ),
            None,
        )
        if found is None:
            return cls(totals)
        try:
            run = read_case_run(found)
        except BadInputError:
            return cls(totals)
        kept = [e for e in recorded_entries(run) if e.key not in keys]
        # a run resumed with a wider selection takes more cases than the record counts
        for entry in kept:
            totals[entry.set] = totals.get(entry.set, 0) + 1
        names = [*run.sets, *(name for name in totals if name not in run.sets)]
        return cls({n: max(run.sets.get(n, 0), totals.get(n, 0)) for n in names}, kept)

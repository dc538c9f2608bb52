"""A case run's progress as the dashboard shows it: plain data, no widgets, no asyncio.

A benchmark run (``--cases``) takes its cases one by one in a seeded random order
(``OUT/<model>/cases.json`` records the order and the sets' sizes). After every case the
dashboard says, per set, how many cases are done and left and each column's running value,
how long a case takes and about how long the rest will take; and for each column over the whole
case set the running value with its anytime-valid band: where the full-set value can still
land, valid however often the run is looked at.

The bands are the table's (``streameval table --ci``): ``leaderboard.intervals.column_intervals``
over the same records — the longest finished prefix of the seeded order, each column computed
as the table computes it (pooled segments for the control columns). Only the reading differs:
the dashboard reads a case's ``scores.json`` without the published schema's check and keeps
what it read until the file changes (``tui.case_scores``), since it reads a running case run
again every few seconds.

The same ``CaseProgress`` is built from a live run (``DashboardModel``'s ended episodes plus
the cases a resumed run kept from before) and from a results folder on disk (``cases.json``
and the cases' ``scores.json``), and from the scores a remote evaluator publishes.
"""

from __future__ import annotations

import contextlib
import json
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from streameval.replay.layout import CASE_RUN
from streameval.tui.case_scores import CaseScores, read_case_scores

from streameval.errors import BadInputError
from streameval.leaderboard.cells import model_cell
from streameval.leaderboard.columns import column_names, metric_scale
from streameval.leaderboard.intervals import (
    ColumnInterval,
    column_intervals,
    recorded_max_keys,
)
from streameval.metrics.anytime import DEFAULT_CONFIDENCE
from streameval.results.scores_file import (
    EpisodeRecord,
    find_scores_files,
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
    record: EpisodeRecord | None = None  # what the table reads of the case (bands, set values)


@dataclass(frozen=True, slots=True)
class SetProgress:
    """One set of the case run: cases ended (``done`` complete, ``incomplete``), left, and
    each column's running value over its complete cases (the table's value of the set's cases
    when their records are known, else the mean of the per-case values)."""

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
    """A column's running value over the whole case set and its anytime-valid band after
    ``cases`` of the ``of`` cases of the run (``leaderboard.intervals.ColumnInterval``), and
    the stop rule's state of the column (``state``: None when no rule watches it)."""

    name: str
    value: float
    low: float
    high: float
    cases: int
    of: int
    decimals: int
    state: str | None = None

    def figures(self) -> str:
        """``97.1 [95.4, 98.2] after 41 of 125``."""
        d = self.decimals
        return (
            f"{self.value:.{d}f} [{self.low:.{d}f}, {self.high:.{d}f}] "
            f"after {self.cases} of {self.of}"
        )

    def text(self) -> str:
        """``direction_accuracy_trans 97.1 [95.4, 98.2] after 41 of 125`` (``: decided
        better`` when a stop rule watches the column)."""
        text = f"{self.name} {self.figures()}"
        return text if self.state is None else f"{text}: {self.state}"


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
    rule: str | None = None  # the stop rule and where it stands ("--stop-when 'width<=4': open")

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


def _column_order(names: Iterable[str]) -> list[str]:
    """Table columns in the table's order; names the table does not know are left out (a
    diagnostic figure is no column)."""
    present = set(names)
    return [name for name in column_names(every_suite=True) if name in present]


StopStates = Callable[[Mapping[str, ColumnInterval]], Mapping[str, str]]
"""The stop rule's state of each column it watches, from the columns' intervals."""


class StopView(Protocol):
    """A case run's ``--stop-when`` rule as the case-set view reads it: the run's own
    monitor (``runs.stop_when.StopMonitor``), or what a remote evaluator's scores messages
    said of its monitor (``tui.remote.RemoteStop``). One rendering path for both."""

    def column_states(self, intervals: Mapping[str, ColumnInterval]) -> Mapping[str, str]: ...

    def summary(self) -> str: ...


def case_progress(
    entries: Sequence[CaseEntry],
    set_totals: Mapping[str, int],
    *,
    running: str | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    stop: str | None = None,
    order: Sequence[str] | None = None,
    max_keys: int = 1,
    states: StopStates | None = None,
    rule: str | None = None,
) -> CaseProgress:
    """The progress of a case run whose ended cases are ``entries``, in the order they ended.

    ``set_totals`` is every set's number of cases (``cases.json``'s ``sets``); a set seen in
    ``entries`` but not there counts its ended cases. The bands are the table's intervals
    (``run_records``: the run's order and ``max_keys`` as ``cases.json`` records them), with
    the stop rule's ``states`` of the columns when a rule watches the run.
    """
    totals = dict(set_totals)
    for entry in entries:
        totals.setdefault(entry.set, 0)
    ended_in = {name: [e for e in entries if e.set == name] for name in totals}
    sets = []
    for name, total in totals.items():
        mine = ended_in[name]
        complete = sum(1 for e in mine if e.complete)
        sets.append(
            SetProgress(name, max(total, len(mine)), complete, len(mine) - complete, _means(mine))
        )
    total = sum(s.total for s in sets)
    records = run_records(entries, order)
    population = max(len(order) if order is not None else total, len(records))
    found = _intervals(records, population, max_keys, confidence)
    judged = dict(states(found)) if states is not None else {}
    bands = tuple(
        _band(interval, judged.get(name))
        for name in _column_order(found)
        if (interval := found[name]).value is not None
    )
    timed = [e.seconds for e in entries if e.seconds is not None]
    per_case = statistics.fmean(timed) if timed else None
    return CaseProgress(total, tuple(sets), bands, per_case, running, confidence, stop, rule)


def _means(entries: Sequence[CaseEntry]) -> dict[str, float]:
    """A set's running value of each column: the table's over the set's cases when every
    case's record is known, else the mean of the per-case values."""
    columns = _column_order(c for e in entries for c in e.values)
    records = [e.record for e in entries if e.record is not None]
    if len(records) == len(entries):
        cells = {column: model_cell(records, column).value for column in columns}
        return {column: value for column, value in cells.items() if value is not None}
    return {
        column: statistics.fmean(e.values[column] for e in entries if column in e.values)
        for column in columns
    }


def run_records(entries: Sequence[CaseEntry], order: Sequence[str] | None) -> list[EpisodeRecord]:
    """The records the bands are over, as ``leaderboard.intervals.read_case_run`` takes them:
    the longest prefix of the run's ``order`` whose cases have ended (a case that ended first,
    on another server, waits for those before it); without an order, the cases in the order
    they ended, up to the first without a record."""
    by_key = {e.key: e for e in entries}
    keys = list(order) if order is not None else [e.key for e in entries]
    records: list[EpisodeRecord] = []
    for key in keys:
        entry = by_key.get(key)
        if entry is None or entry.record is None:
            break
        records.append(entry.record)
    return records


_INTERVALS: dict[tuple[object, ...], tuple[list[EpisodeRecord], dict[str, ColumnInterval]]] = {}
"""The intervals of the record lists asked for lately: a folder read again every few seconds
mostly asks for the same ones (the reader hands back the same record objects until a file
changes; they are kept here with their answer, so their ids stay theirs)."""
_INTERVALS_LIMIT = 64


def _intervals(
    records: list[EpisodeRecord], population: int, max_keys: int, confidence: float
) -> dict[str, ColumnInterval]:
    key = (tuple(id(r) for r in records), population, max_keys, confidence)
    known = _INTERVALS.get(key)
    if known is not None:
        return known[1]
    found = column_intervals(records, population, max_keys=max_keys, confidence=confidence)
    if len(_INTERVALS) >= _INTERVALS_LIMIT:
        _INTERVALS.clear()
    _INTERVALS[key] = (records, found)
    return found


def _band(interval: ColumnInterval, state: str | None) -> ColumnBand:
    scale, decimals = metric_scale(interval.column)
    assert interval.value is not None  # bands are made for measured columns only
    return ColumnBand(
        interval.column,
        interval.value,
        interval.low,
        interval.high,
        interval.cases,
        interval.of,
        1 if scale >= 100 else min(decimals, 3),
        state,
    )


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

    @property
    def max_keys(self) -> int:
        """The most keys a case holds (a pooled column's most segments a case), as the table's
        intervals take it (``leaderboard.intervals.read_case_run``)."""
        return recorded_max_keys(self.model_dir, self.extra)


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
            scores.record,
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


def recorded_states(doc: Mapping[str, Any]) -> dict[str, str]:
    """The stop rule's final state of each column it watched (``cases.json``'s ``stopped``
    ``states``, as the run's monitor said them); empty when not recorded."""
    stopped = doc.get("stopped")
    states = stopped.get("states") if isinstance(stopped, dict) else None
    if not isinstance(states, dict):
        return {}
    return {str(k): v for k, v in states.items() if isinstance(v, str)}


def progress_of(run: CaseRunFile, confidence: float = DEFAULT_CONFIDENCE) -> CaseProgress:
    """The progress of a case run on disk, its stop rule's end included."""
    recorded = recorded_states(run.extra)
    return case_progress(
        recorded_entries(run),
        run.sets,
        confidence=confidence,
        stop=stop_note(run.extra),
        order=run.order,
        max_keys=run.max_keys,
        states=(lambda _: recorded) if recorded else None,
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
    folder: Path | None = None  # a case's results folder: the run's cases.json is above it
    max_keys: int = 1  # the most keys of a case, when no cases.json says it (a remote run)

    def recorded(self) -> tuple[tuple[str, ...] | None, int]:
        """The run's order and most keys a case holds, as its ``cases.json`` says now (it is
        written when the run's first case starts; a resumed run writes it again): the bands'
        order (``run_records``). ``(None, max_keys)`` when there is none to read."""
        path = None if self.folder is None else case_run_above(self.folder)
        if path is None:
            return None, self.max_keys
        try:
            run = read_case_run(path)
        except BadInputError:
            return None, self.max_keys
        return run.order, run.max_keys

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
        folder = next(
            (f for case, f in zip(cases, results_dirs, strict=True) if case is not None), None
        )
        if found is None:
            return cls(totals, folder=folder)
        try:
            run = read_case_run(found)
        except BadInputError:
            return cls(totals, folder=folder)
        kept = [e for e in recorded_entries(run) if e.key not in keys]
        # a run resumed with a wider selection takes more cases than the record counts
        for entry in kept:
            totals[entry.set] = totals.get(entry.set, 0) + 1
        names = [*run.sets, *(name for name in totals if name not in run.sets)]
        return cls(
            {n: max(run.sets.get(n, 0), totals.get(n, 0)) for n in names}, kept, folder=folder
        )

"""``--stop-when``: end a case run as soon as the question asked is answered
(docs/methods.md#running-intervals-over-a-case-run).

Before each case starts, ``StopMonitor.check`` reads the run's finished cases
(``leaderboard.intervals``) and asks the rule: ``width<=W`` — is every watched column's
interval at most W points wide; ``vs=DIR`` — is every column decided better, worse or within
``--margin`` of the finished run in DIR, on the same cases (paired case by case). When it is,
no new case starts; cases already running finish. ``StopMonitor.finish`` then prints one line
per column decided and after how many cases, and records the cases not run as such (in
``cases.json`` and as ``not_run`` lines of ``manifest.jsonl``): a later run with the same
``--out`` and seed and ``--resume`` runs exactly those.

Watched columns: the named ones, else every column of the run that a finished case has
measured (a column nothing has measured yet has no value to narrow). A column whose per-case
value is unbounded (``global_memory``) has no interval before the last case and is not
waited for unless named. A rule that can never be met is one ``BadInputError`` before
anything runs: a column the run cannot compute, or ``vs=DIR`` that is not a finished case run
over the same cases.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from streameval.core.atomic import write_json_atomic
from streameval.errors import BadInputError
from streameval.leaderboard.columns import table_columns
from streameval.leaderboard.intervals import (
    CASES_FILE,
    CaseRun,
    ColumnInterval,
    case_folder,
    column_intervals,
    column_kind,
    find_case_runs,
    read_case_run,
)
from streameval.leaderboard.rounding import format_value
from streameval.metrics.anytime import decide, width_met
from streameval.metrics.stop_rule import (
    OPTION,
    StopRule,
    VersusRule,
    WidthRule,
    parse_stop_when,
    rule_summary,
)
from streameval.protocol.stop_state import WireStop
from streameval.results.results_log import upsert_line
from streameval.results.scores_file import SCORES_FILE

MANIFEST_FILE = "manifest.jsonl"


@dataclass
class StopMonitor:
    """The rule of one case run, checked before each case (module docstring).

    ``model_dir``: ``OUT/<model>/``; ``case_keys``: the run's cases in order; ``columns``: the
    columns the run can compute; ``baseline``: the finished run of ``vs=DIR``."""

    rule: StopRule
    text: str
    model_dir: Path
    case_keys: tuple[str, ...]
    columns: tuple[str, ...]
    baseline: CaseRun | None = None
    baseline_values: dict[str, float] = field(default_factory=dict)
    decided: dict[str, tuple[str, ColumnInterval]] = field(default_factory=dict)
    met: bool = False
    checked_at: int = -1
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def watched(self, intervals: dict[str, ColumnInterval]) -> list[str]:
        """The columns the rule waits for, given the intervals so far."""
        if isinstance(self.rule, WidthRule):
            named = list(self.rule.named_columns)
            if self.rule.every is None:
                return named
            rest = [
                name
                for name, interval in intervals.items()
                if name not in named
                and interval.value is not None
                and column_kind(name) != "unbounded"
            ]
            return [*named, *rest]
        return [
            name
            for name in self.baseline_values
            if name in intervals and column_kind(name) != "unbounded"
        ]

    def state(self, name: str, interval: ColumnInterval) -> str | None:
        """The column's verdict ("width", "better", "worse", "within"), None when undecided."""
        if interval.value is None:
            return None
        if isinstance(self.rule, WidthRule):
            width = self.rule.width_for(name)
            ok = width is not None and width_met(interval.low, interval.high, width)
            return "width" if ok else None
        base = self.baseline_values[name]
        verdict = decide(interval.low - base, interval.high - base, self.rule.margin)
        return None if verdict == "undecided" else verdict

    def column_states(self, intervals: Mapping[str, ColumnInterval]) -> dict[str, str]:
        """Each watched column's state as the dashboard shows it beside the column's interval:
        ``open``, ``width met``, or ``decided better|worse|within`` (a verdict ``check``
        reached stays). ``intervals``: the run's, as ``column_intervals`` makes them."""
        with self._lock:
            decided = {name: verdict for name, (verdict, _) in self.decided.items()}
        found = dict(intervals)
        return {
            name: state_words(decided.get(name) or self.state(name, found[name]))
            for name in self.watched(found)
            if name in found
        }

    def summary(self) -> str:
        """The rule and where it stands: ``--stop-when 'width<=4': met after 41 cases``."""
        with self._lock:
            met, after = self.met, self.checked_at
        return rule_summary(self.text, met, after)

    def wire_state(self) -> WireStop:
        """What a remote dashboard is sent of the rule (``protocol.stop_state``): the rule,
        each watched column's state over the finished cases on disk (``column_states``) and
        whether it was met, after how many cases. Reads the run's scores: off the event loop."""
        states = self.column_states(self.intervals()[1])
        with self._lock:
            met, after = self.met, self.checked_at
        return WireStop(self.text, states, met, after if after >= 0 else None)

    def intervals(self) -> tuple[CaseRun | None, dict[str, ColumnInterval]]:
        try:
            run = read_case_run(self.model_dir)
        except BadInputError:  # no case has started yet
            return None, {}
        if tuple(run.order) != self.case_keys:  # a former run's record: this one has not begun
            return None, {}
        # vs=DIR: the baseline ran the same cases to the end, so its value is known exactly
        # and the difference's interval is this run's shifted by it. Pairing case by case
        # (column_intervals' baseline=) doubles the range the sequence must cover: on the
        # demo's runs it decided later, so it is not used here (docs/methods.md).
        found = column_intervals(
            run.records, run.population, columns=self.columns, max_keys=run.max_keys
        )
        return run, found

    def check(self) -> bool:
        """True once the rule is met (then it stays met): no new case should start."""
        with self._lock:
            if self.met:
                return True
            run, found = self.intervals()
            if run is None or run.finished == 0:
                return False
            self.checked_at = run.finished
            watched = self.watched(found)
            states = {name: self.state(name, found[name]) for name in watched}
            for name, verdict in states.items():
                if verdict is not None and name not in self.decided:
                    self.decided[name] = (verdict, found[name])
            self.met = bool(watched) and all(v is not None for v in states.values())
            return self.met

    def lines(self) -> list[str]:
        """One line per column decided: the verdict, the interval and after how many cases."""
        out: list[str] = []
        for name, (verdict, interval) in self.decided.items():
            shown = (
                f"{format_value(interval.value)} [{format_value(interval.low)}, "
                f"{format_value(interval.high)}]"
            )
            after = f"after {interval.cases} of {interval.of} cases"
            if verdict == "width":
                out.append(
                    f"{name}: {shown}, width {interval.width:.2f} {_width(self, name)}, {after}"
                )
                continue
            base = self.baseline_values[name]
            low, high = interval.low - base, interval.high - base
            what = f"within {self.rule_margin():g} points of" if verdict == "within" else verdict
            out.append(
                f"{name}: {what} {self.baseline_label()} ({format_value(base)}): {shown}, "
                f"difference [{low:+.2f}, {high:+.2f}], {after}"
            )
        return out

    def rule_margin(self) -> float:
        return self.rule.margin if isinstance(self.rule, VersusRule) else 0.0

    def baseline_label(self) -> str:
        return self.rule.baseline if isinstance(self.rule, VersusRule) else ""

    def finish(self) -> list[str]:
        """After the run: the lines to print — one per column decided, and when the rule ended
        the run before its last case, how many were not run — and those cases recorded
        (``cases.json`` ``stopped``, ``manifest.jsonl`` ``not_run`` lines). Empty when nothing
        was decided."""
        self.check()  # the last case is in too: what it decided is said
        if not self.met:
            decided = self.lines()
            if not decided:
                return []
            return [*decided, f"{OPTION} {self.text!r} not met: {len(decided)} column(s) decided"]
        run = read_case_run(self.model_dir)
        by_key = set(run.order[: run.finished])
        not_run = [
            key
            for key in run.order
            if key not in by_key and not (case_folder(self.model_dir, key) / SCORES_FILE).is_file()
        ]
        model = run.doc.get("model", self.model_dir.name)
        for key in not_run:
            case_set, _, name = key.rpartition("/")
            upsert_line(
                self.model_dir / MANIFEST_FILE,
                {
                    "model": model,
                    "episode": name,
                    "results_dir": str(case_folder(self.model_dir, key)),
                    "case": key,
                    "set": case_set,
                    "status": "not_run",
                    "reason": f"{OPTION} {self.text!r} was met first",
                },
            )
        doc = {
            **run.doc,
            "stopped": {
                "rule": self.text,
                "after": run.finished,
                "not_run": not_run,
                "at": datetime.now(UTC).isoformat(timespec="seconds"),
                # each watched column's last state, as the dashboard shows it
                "states": self.column_states(self.intervals()[1]),
            },
        }
        write_json_atomic(self.model_dir / CASES_FILE, doc)
        lines = self.lines()
        if not not_run:
            return lines
        lines.append(
            f"{OPTION} {self.text!r} met after {run.finished} of {run.population} cases: "
            f"{len(not_run)} not run (recorded in {self.model_dir / CASES_FILE}; the same "
            "command with --resume and without --stop-when runs them)"
        )
        return lines


def state_words(verdict: str | None) -> str:
    """A column's verdict (``StopMonitor.state``) in the dashboard's words."""
    if verdict is None:
        return "open"
    if verdict == "width":
        return "width met"
    return f"decided {verdict}"


def _width(monitor: StopMonitor, name: str) -> str:
    rule = monitor.rule
    width = rule.width_for(name) if isinstance(rule, WidthRule) else None
    return f"<= {width:g}" if width is not None else ""


def computable_columns(suites: Sequence[str], quality: bool) -> tuple[str, ...]:
    """The columns a case run of ``suites`` can compute: the table's, less the quality pair
    without ``--quality`` (not_applicable in every case then)."""
    return tuple(c.name for c in table_columns(set(suites)) if quality or c.group != "quality")


def stop_monitor(
    text: str,
    margin: float,
    model_dir: Path,
    case_keys: Sequence[str],
    suites: Sequence[str],
    *,
    quality: bool,
) -> StopMonitor:
    """The monitor of ``--stop-when text``, every check that can be made before a case runs
    made here (module docstring): ``BadInputError`` naming ``--stop-when`` otherwise."""
    rule = parse_stop_when(text, margin)
    columns = computable_columns(suites, quality)
    every = table_columns(every_suite=True)
    for name in rule.named_columns:
        if name not in {c.name for c in every}:
            known = ", ".join(columns)
            raise BadInputError(OPTION, f"no column {name!r}; this run's columns: {known}")
        if name not in columns:
            raise BadInputError(
                OPTION,
                f"this run cannot compute {name!r} (its columns: {', '.join(columns)}), so "
                "the rule could never be met",
            )
    monitor = StopMonitor(rule, text, model_dir, tuple(case_keys), columns)
    if isinstance(rule, VersusRule):
        monitor.baseline = finished_baseline(Path(rule.baseline), case_keys)
        values = column_intervals(
            monitor.baseline.records,
            monitor.baseline.population,
            columns=columns,
            max_keys=monitor.baseline.max_keys,
        )
        monitor.baseline_values = {
            name: interval.value for name, interval in values.items() if interval.value is not None
        }
        if not monitor.baseline_values:
            raise BadInputError(
                OPTION, f"{rule.baseline} has no value in any column this run computes"
            )
    return monitor


def finished_baseline(folder: Path, case_keys: Sequence[str]) -> CaseRun:
    """The finished case run of ``vs=DIR``: DIR itself (``OUT/<model>/``) or the one case run
    under it (``OUT``); every case finished; the same cases as this run."""
    if not folder.is_dir():
        raise BadInputError(OPTION, f"vs={folder}: no such folder")
    if (folder / CASES_FILE).is_file():
        model_dir = folder
    else:
        runs = find_case_runs([folder])
        if not runs:
            raise BadInputError(OPTION, f"vs={folder}: not a case run (no {CASES_FILE} in it)")
        if len(runs) > 1:
            names = ", ".join(str(p) for p in runs.values())
            raise BadInputError(OPTION, f"vs={folder} holds several case runs; name one: {names}")
        model_dir = next(iter(runs.values()))
    run = read_case_run(model_dir)
    if run.finished < run.population:
        raise BadInputError(
            OPTION,
            f"vs={folder}: not a finished run ({run.finished} of {run.population} cases); "
            "finish it first (--resume)",
        )
    if set(run.order) != set(case_keys):
        mine, theirs = set(case_keys), set(run.order)
        raise BadInputError(
            OPTION,
            f"vs={folder} ran other cases ({len(theirs - mine)} not in this run, "
            f"{len(mine - theirs)} of this run not in it): the pairing needs the same cases",
        )
    return run

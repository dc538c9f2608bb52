"""``streameval compare A B``: two runs side by side — first how they were configured
differently (transport, fps, resolution, backends, host, options, versions), then every
column of the master table with its bounds and, for a case run, its anytime-valid interval,
and the runtime figures of ``scores.json``'s ``runtime`` object (``not measured`` without one).

The configuration comes first because a difference in a column means little until one knows
the runs were set up alike: a model at 720p on an H100 and the same model at 480p on a laptop
are two different measurements, not a regression. Each run's configuration is read from its
ledger (``results.ledger``) where it has one, and from its episodes' ``scores.json`` and caches
otherwise, so results written before the ledger existed still compare.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streameval.errors import BadInputError
from streameval.inputs.jsonfile import read_json_file
from streameval.leaderboard.cells import Cell
from streameval.leaderboard.display import cell_text
from streameval.leaderboard.table import MasterTable
from streameval.results.ledger import LEDGER_FILE
from streameval.results.scores_file import find_scores_files

# the order the differences are listed in: what changes a measurement most first
SECTIONS = ("transport", "fps", "resolution", "backends", "host", "options", "versions")
# options that name where a run was written, not how it was run
_NOT_CONFIGURATION = frozenset({"out", "command", "quiet", "verbose", "no_tui", "typed_argv"})


def _table_of(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a field a run did not write)."""
    return value if isinstance(value, dict) else {}


def _values(found: set[str]) -> str:
    return ", ".join(sorted(found)) if found else "not recorded"


def _episode_facts(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(scores.json, cache/episode.json) of one episode; an unreadable one is empty."""
    try:
        scores = read_json_file(path)
    except BadInputError:
        return {}, {}
    cache_meta: Any = {}
    meta_path = path.parent / "cache" / "episode.json"
    if meta_path.is_file():
        try:
            cache_meta = read_json_file(meta_path)
        except BadInputError:
            cache_meta = {}
    return (scores if isinstance(scores, dict) else {}), (
        cache_meta if isinstance(cache_meta, dict) else {}
    )


def _transport(source: object, session: object) -> str:
    text = str(source or "")
    if text.startswith("python:"):
        kind = "in process"
    elif "://" in text:
        kind = text.split("://", 1)[0]
    elif text:
        kind = "replay"
    else:
        kind = "unknown"
    return f"{kind} ({session})" if session else kind


def run_configuration(run: Path) -> dict[str, str]:
    """A run's configuration as flat ``section.name → text``, from its ledger and episodes."""
    config: dict[str, set[str]] = {}

    def put(key: str, value: object) -> None:
        if value is not None:
            config.setdefault(key, set()).add(str(value))

    for path in find_scores_files(run):
        scores, cache = _episode_facts(path)
        provenance = _table_of(scores.get("provenance"))
        put("transport", _transport(provenance.get("source"), cache.get("session")))
        put("fps.announced", scores.get("fps"))
        runtime = scores.get("runtime")
        if isinstance(runtime, dict):
            put("fps.native", runtime.get("native_fps"))
        if cache.get("width") and cache.get("height"):
            put("resolution", f"{cache['width']}×{cache['height']}")
        for job, name in _table_of(provenance.get("backends")).items():
            put(f"backends.{job}", name)
        for lib, version in _table_of(provenance.get("versions")).items():
            put(f"versions.{lib}", version)
    ledger_path = run / LEDGER_FILE
    ledger = _table_of(read_json_file(ledger_path) if ledger_path.is_file() else {})
    for key, value in _table_of(ledger.get("host")).items():
        put(f"host.{key}", value)
    for key, value in _table_of(ledger.get("versions")).items():
        put(f"versions.{key}", value)
    for key, value in _table_of(_table_of(ledger.get("inputs")).get("options")).items():
        if key not in _NOT_CONFIGURATION:
            put(f"options.{key}", value)
    gpu = _table_of(_table_of(ledger.get("hardware")).get("gpu"))
    devices = gpu.get("devices")
    if isinstance(devices, list) and devices:
        put("host.gpu", ", ".join(str(_table_of(d).get("name")) for d in devices))
    return {key: _values(values) for key, values in config.items()}


@dataclass(frozen=True, slots=True)
class ConfigDifference:
    key: str
    a: str
    b: str


def _section_rank(key: str) -> tuple[int, str]:
    section = key.split(".", 1)[0]
    return (SECTIONS.index(section) if section in SECTIONS else len(SECTIONS), key)


def configuration_differences(a: Mapping[str, str], b: Mapping[str, str]) -> list[ConfigDifference]:
    """Every configuration entry the two runs do not share, in ``SECTIONS`` order (a key
    only one run recorded differs too: ``not recorded`` on the other side)."""
    keys = sorted(set(a) | set(b), key=_section_rank)
    return [
        ConfigDifference(k, a.get(k, "not recorded"), b.get(k, "not recorded"))
        for k in keys
        if a.get(k, "not recorded") != b.get(k, "not recorded")
    ]


@dataclass(frozen=True, slots=True)
class ColumnRow:
    """One column of the two runs: each model's cell as the table prints it (value, coverage,
    bounds, the case run's interval), ``""`` where the run has no such model."""

    column: str
    label: str
    cells: tuple[tuple[str, str, str], ...]  # (model, cell text in A, cell text in B)


def _cells(table: MasterTable) -> dict[str, dict[str, Cell]]:
    rows = (*table.rows, *(e.row for e in table.excluded))
    return {row.model: dict(row.cells) for row in rows}


def column_rows(a: MasterTable, b: MasterTable) -> list[ColumnRow]:
    """The columns of both tables, models paired by name (a model in one run only is shown
    against an empty cell)."""
    cells_a, cells_b = _cells(a), _cells(b)
    models = sorted(set(cells_a) | set(cells_b), key=lambda m: (m.casefold(), m))
    columns = {c.name: c for c in (*a.columns, *b.columns)}
    rows: list[ColumnRow] = []
    for name, column in columns.items():
        paired = []
        for model in models:
            left = cells_a.get(model, {}).get(name)
            right = cells_b.get(model, {}).get(name)
            paired.append(
                (
                    model,
                    "" if left is None else cell_text(left),
                    "" if right is None else cell_text(right),
                )
            )
        rows.append(ColumnRow(name, column.label, tuple(paired)))
    return rows


# the runtime figures of scores.json's ``runtime`` object shown beside the columns
RUNTIME_FIELDS = (
    "native_fps",
    "worst_window_fps",
    "realtime",
    "time_to_first_frame_s",
    "cold_start_s",
    "native_frames",
    "repeat_frames",
    "interpolated_frames",
)
NOT_MEASURED = "not measured"


def runtime_figures(run: Path) -> dict[str, str]:
    """Each runtime field over the run's episodes: the median of a number, the values of a
    verdict (``pass``, ``fail``, ``too short``), ``not measured`` without a runtime object."""
    import statistics

    numbers: dict[str, list[float]] = {}
    words: dict[str, set[str]] = {}
    for path in find_scores_files(run):
        runtime = _table_of(_episode_facts(path)[0].get("runtime"))
        for name in RUNTIME_FIELDS:
            value = runtime.get(name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                numbers.setdefault(name, []).append(float(value))
            elif isinstance(value, str):
                words.setdefault(name, set()).add(value)
    shown: dict[str, str] = {}
    for name in RUNTIME_FIELDS:
        if name in numbers:
            shown[name] = f"{statistics.median(numbers[name]):.2f}"
        elif name in words:
            shown[name] = ", ".join(sorted(words[name]))
        else:
            shown[name] = NOT_MEASURED
    return shown


@dataclass(frozen=True, slots=True)
class Comparison:
    a: Path
    b: Path
    differences: list[ConfigDifference]
    shared: int  # configuration entries both runs share
    columns: list[ColumnRow]
    runtime: list[tuple[str, str, str]] = field(default_factory=list)  # (field, A, B)

    def to_json(self) -> dict[str, Any]:
        return {
            "a": str(self.a),
            "b": str(self.b),
            "configuration_differences": [
                {"key": d.key, "a": d.a, "b": d.b} for d in self.differences
            ],
            "configuration_shared": self.shared,
            "columns": [
                {
                    "column": r.column,
                    "label": r.label,
                    "models": [{"model": m, "a": x, "b": y} for m, x, y in r.cells],
                }
                for r in self.columns
            ],
            "runtime": [{"field": f, "a": x, "b": y} for f, x, y in self.runtime],
        }


def _table(run: Path) -> MasterTable:
    from streameval.leaderboard import INCLUDE_ALL, tabulate
    from streameval.leaderboard.intervals import find_case_runs, with_intervals

    table = tabulate([run], rule=INCLUDE_ALL)
    runs = find_case_runs([run])
    return with_intervals(table, runs) if runs else table


def compare_runs(a: Path, b: Path) -> Comparison:
    """The configuration differences and the columns of runs ``a`` and ``b`` (results
    folders; ``BadInputError`` naming one that holds no results)."""
    config_a, config_b = run_configuration(a), run_configuration(b)
    differences = configuration_differences(config_a, config_b)
    shared = len(set(config_a) & set(config_b)) - sum(
        1 for d in differences if d.key in config_a and d.key in config_b
    )
    runtime_a, runtime_b = runtime_figures(a), runtime_figures(b)
    runtime = [(name, runtime_a[name], runtime_b[name]) for name in RUNTIME_FIELDS]
    return Comparison(a, b, differences, shared, column_rows(_table(a), _table(b)), runtime)

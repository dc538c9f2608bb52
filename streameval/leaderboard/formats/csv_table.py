"""The master table as CSV (``streameval table --csv``): one row per model — included and
excluded, with an ``included`` column and the reasons — and per column the value, status and
coverage, so a spreadsheet never shows a number without its status."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from streameval.leaderboard import MasterTable, ModelRow
from streameval.leaderboard.diagnostics import Diagnostics
from streameval.leaderboard.sets import ALL_SETS


def table_csv(
    table: MasterTable,
    diag: Diagnostics | None = None,
    sets: Mapping[str, MasterTable] | None = None,
) -> str:
    """One row per model; with ``diag`` each diagnostic adds ``<name>_mean`` and
    ``<name>_measured`` (the unit is the metric's own: see ``--json``). With benchmark
    ``sets`` a first column ``set`` says which table a row is of (``all sets`` for the table
    over every episode, whose rows come last)."""
    if sets:
        # the diagnostics are of the whole: a set's rows leave their columns empty
        pad = 2 * len(diag.metrics) if diag is not None else 0
        parts = [_csv(t, None, name, pad) for name, t in sets.items()]
        parts.append(_csv(table, diag, ALL_SETS))
        return parts[-1].split("\n", 1)[0] + "\n" + "".join(p.split("\n", 1)[1] for p in parts)
    return _csv(table, diag, None)


def _csv(table: MasterTable, diag: Diagnostics | None, set_name: str | None, pad: int = 0) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["model", "episodes", "included", "excluded_reasons"]
    every_row = [*table.rows, *(e.row for e in table.excluded)]
    ci = any(cell.interval is not None for row in every_row for cell in row.cells.values())
    for c in table.columns:
        header += [c.name, f"{c.name}_status", f"{c.name}_coverage"]
        if ci:  # table --ci: the case run's interval, after how many of its cases, the ranks
            header += [f"{c.name}_{part}" for part in ("low", "high", "cases", "of", "rank")]
    specs = diag.metrics if diag is not None else ()
    by_model = dict(diag.rows) if diag is not None else {}
    for s in specs:
        header += [f"{s.name}_mean", f"{s.name}_measured"]
    writer.writerow(header if set_name is None else ["set", *header])
    rows: list[tuple[ModelRow, tuple[str, ...]]] = [(r, ()) for r in table.rows]
    rows += [(e.row, e.reasons) for e in table.excluded]
    for row, reasons in rows:
        line: list[Any] = [row.model, row.n_episodes, not reasons, "; ".join(reasons)]
        for c in table.columns:
            cell = row.cells[c.name]
            value = "" if cell.value is None else f"{cell.value:.6f}"
            line += [value, cell.status, f"{cell.measured}/{cell.applicable}"]
            if ci:
                i = cell.interval
                line += (
                    ["", "", "", "", ""]
                    if i is None
                    else [f"{i.low:.6f}", f"{i.high:.6f}", i.cases, i.of, i.shared_rank or ""]
                )
        for s in specs:
            d = by_model[row.model][s.name]
            line += ["" if d.mean is None else f"{d.mean:.6g}", f"{d.measured}/{d.total}"]
        line += [""] * pad
        writer.writerow(line if set_name is None else [set_name, *line])
    return buffer.getvalue()

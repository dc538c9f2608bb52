"""The master table as JSON (``streameval table --json``): the table's own ``to_json`` — every
cell with status, coverage, bounds, reasons and rank — for programs."""

from __future__ import annotations

import json
from collections.abc import Mapping

from streameval.leaderboard import MasterTable
from streameval.leaderboard.diagnostics import Diagnostics


def table_json(
    table: MasterTable,
    diag: Diagnostics | None = None,
    sets: Mapping[str, MasterTable] | None = None,
) -> str:
    """The table's JSON; with ``diag`` (``--diagnostics``) a ``diagnostics`` key too; with
    benchmark ``sets`` (``leaderboard.sets``) a ``sets`` key, one table per set."""
    doc = table.to_json()
    if diag is not None:
        doc["diagnostics"] = diag.to_json()
    if sets:
        doc["sets"] = {name: t.to_json() for name, t in sets.items()}
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"

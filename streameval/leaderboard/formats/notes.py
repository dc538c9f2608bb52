"""The notes a table needs to be read right, whatever its format: why it is empty, and whether
its models were scored alike (printed on stderr by ``streameval table``)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from streameval.leaderboard import ExclusionRule, MasterTable


def empty_table_message(table: MasterTable, rule: ExclusionRule) -> str | None:
    """When the rule left no model: say so, and how to see everything (an empty table would
    not say why it is empty)."""
    if table.rows or not table.excluded:
        return None
    n = len(table.excluded)
    why = (
        f"the default rule needs at least {rule.min_episodes} episodes per model and leaves "
        "out models that fail uniformly"
        if rule.enabled
        else "every model was excluded on request"
    )
    return (
        f"no model in the table: {n} model{'s' if n != 1 else ''} excluded ({why}; listed "
        "below). See every model with --include-all, or lower --min-episodes."
    )


def backend_notes(table: MasterTable) -> list[str]:
    """A note per provenance backend that differs between the table's included models: their
    numbers are not strictly comparable (docs/methods.md#provenance)."""
    used: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for row in table.rows:
        for record in row.episodes:
            for job, name in _backends(record.path).items():
                used[job][str(name)].add(row.model)
    notes = []
    for job in sorted(used):
        if len(used[job]) > 1:
            parts = "; ".join(
                f"{name} ({', '.join(sorted(models))})"
                for name, models in sorted(used[job].items())
            )
            notes.append(f"models scored with different {job} backends: {parts}")
    return notes


def _backends(scores_path: Path) -> dict[str, object]:
    try:
        doc = json.loads(scores_path.read_text(encoding="utf-8"))
        backends = doc.get("provenance", {}).get("backends", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return backends if isinstance(backends, dict) else {}

"""WorldAtlas columns of the master table (shown when a model has memory_loop episodes).

memory_scene_f1 is seed 003's leaderboard task score: T_i = 0 for a valid-input gate failure,
the conditional F1 for a passed gate; its mean over the measured episodes, the coverage k/N,
and bounds [sum T / N, (sum T + N - |M|) / N] when episodes are missing (the full-suite value
is then not official: the cell is ``partial``). The gate column is the pass rate; nATEt and
nATEr are means of 1 - raw (seed 004 normalization), all on the table's 0-100 scale.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from streameval.results import MetricResult

PERCENT = 100.0
MEMORY_LOOP_SUITE = "memory_loop"
WORLDATLAS_COLUMN_SPECS: tuple[tuple[str, str, str], ...] = (
    ("memory_return_gate", "Return Gate (pass rate)", "Gate"),
    ("keystroke_natet", "Keystroke nATEt", "nATEt"),
    ("keystroke_nater", "Keystroke nATEr", "nATEr"),
    ("memory_scene_f1", "Memory Scene F1 (task)", "SceneF1"),
)


def task_values(measured: Sequence[MetricResult]) -> list[float]:
    """T_i x 100 of each official memory_scene_f1 result (gate failures count 0)."""
    values = []
    for m in measured:
        task: Any = m.details.get("task_value")
        if isinstance(task, (int, float)) and math.isfinite(task):
            values.append(PERCENT * float(task))
    return values


def task_score_bounds(values: Sequence[float], n_missing: int) -> tuple[float, float, float]:
    """(mean over measured, lower, upper) as seed 003, on the 0-100 scale."""
    total = math.fsum(values)
    n_all = len(values) + n_missing
    return total / len(values), total / n_all, (total + PERCENT * n_missing) / n_all

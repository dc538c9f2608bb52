"""Short keys applied to the reference's control outputs
(docs/methods.md#short-keys-are-not-applicable).

The reference scores a key switch whose new segment has at most 2 stable samples 0
(``no_response``: its steady state is 0 by definition); streameval makes that switch
``not_applicable`` with the shortest key that would be scored. 14 of the golden set's switches
are such switches, so the expectation is the reference's output with that one departure
applied: those switches carry no score, and the case and group latency columns that pooled
them are recomputed from the remaining switches exactly as the reference pools them (mean over
switches, 100·). Everything else is the reference's number unchanged.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

_POOL_OF = {"W": "t", "S": "t", "A": "t", "D": "t", "L": "r", "R": "r"}


def _short(case: dict[str, Any], switch: dict[str, Any]) -> bool:
    seg = next(s for s in case["segments"] if s["seg"] == switch["seg"])
    return bool(seg["window"]["n"] <= 2)


def _pooled(switches: list[dict[str, Any]]) -> dict[str, float | None]:
    cols: dict[str, float | None] = {}
    for pool in ("t", "r"):
        mine = [s["score"] for s in switches if _POOL_OF[s["new"]] == pool]
        cols[f"RL_{pool}"] = 100.0 * float(np.mean(mine)) if mine else None
    return cols


def with_short_keys(doc: dict[str, Any], apply: bool = True) -> dict[str, Any]:
    """A copy of the golden ``control`` document with the departure applied (module docstring).

    ``apply=False`` only recomputes the latency columns from the per-switch values: the test
    that this pooling reproduces the reference's own columns.
    """
    out = copy.deepcopy(doc)
    for case in out["cases"]:
        short = [sw for sw in case["switches"] if apply and _short(case, sw)]
        for sw in short:
            sw["na"] = True
        if short or not apply:
            kept = [sw for sw in case["switches"] if not sw.get("na")]
            for col, value in _pooled(kept).items():
                if col in case["columns"]:
                    case["columns"][col] = value
    for group in out["groups"]:
        kept = [
            sw for k in group["cases"] for sw in out["cases"][k]["switches"] if not sw.get("na")
        ]
        for col, value in _pooled(kept).items():
            if col in group["columns"]:
                group["columns"][col] = value
    return out


def short_switches(doc: dict[str, Any]) -> int:
    """How many switches the departure takes out (14 in the golden set)."""
    return sum(_short(case, sw) for case in doc["cases"] for sw in case["switches"])

"""Fixture builders for the leaderboard tests: small scores.json files written by code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from streameval.leaderboard import (
    INCLUDE_ALL,
    Cell,
    MasterTable,
    tabulate,
)

Metrics = dict[str, dict[str, Any]]


def official(normalized: float, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "raw": normalized / 100.0,
        "normalized": normalized,
        "status": "official",
        "reason": None,
        "details": details or {},
    }


def not_applicable(reason: str) -> dict[str, Any]:
    return {"raw": None, "normalized": None, "status": "not_applicable", "reason": reason}


def missing(reason: str) -> dict[str, Any]:
    return {"raw": None, "normalized": None, "status": "missing", "reason": reason}


def control(values: list[float], *, signed: bool = False, extra: int = 0) -> dict[str, Any]:
    """A control metric as ``metrics/control/kernels.py`` writes it: scored segments, plus ``extra``
    not_applicable and dropped segments that must never be averaged in."""
    segments: list[dict[str, Any]] = [
        {"index": i, "key": "W", "family": "fwd", "status": "scored", "value": v, "reason": None}
        for i, v in enumerate(values)
    ]
    for j in range(extra):
        segments.append({"index": 100 + j, "status": "not_applicable", "reason": "few samples"})
        segments.append({"index": 200 + j, "status": "dropped", "value": 5.0, "reason": "range"})
    raw = float(np.mean(values))
    normalized = 100.0 * max(0.0, raw) if signed else 100.0 * raw
    return official(normalized, {"segments": segments, "n_scored": len(values)})


def write_episode(
    root: Path,
    model: str,
    episode: str,
    metrics: Metrics,
    *,
    suite: str = "worldmark",
    complete: bool = True,
    fmt: str = "streameval.scores/2",
) -> Path:
    path = root / model / episode / "scores.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "format": fmt,
        "model": model,
        "suite": suite,
        "episode": episode,
        "fps": 16,
        "frames": 320,
        "complete": complete,
        "metrics": metrics,
    }
    path.write_text(json.dumps(doc))
    return path


def write_model(root: Path, model: str, per_episode: list[Metrics], **kw: Any) -> None:
    for i, metrics in enumerate(per_episode):
        write_episode(root, model, f"{i:03d}", metrics, **kw)


def table_of(root: Path, **kw: Any) -> MasterTable:
    kw.setdefault("rule", INCLUDE_ALL)
    return tabulate([root], **kw)


def cell(table: MasterTable, model: str, column: str) -> Cell:
    return table.row(model).cells[column]

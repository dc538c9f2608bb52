"""Locate and read the WorldAtlas golden vectors (reference outputs on generated inputs).

The folder is ``$STREAMEVAL_GOLDEN/worldatlas`` (by default ``shared/reference/golden/worldatlas``
beside the clone): the reference's outputs on generated inputs, not distributed. On a user's
clone it is absent and the parity tests skip with a message saying where to put it.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def golden_dir() -> Path:
    env = os.environ.get("STREAMEVAL_GOLDEN")
    root = Path(env) if env else REPO.parent / "shared" / "reference" / "golden"
    folder = root / "worldatlas"
    if not folder.is_dir():
        pytest.skip(f"WorldAtlas golden vectors not found at {folder} (set STREAMEVAL_GOLDEN)")
    return folder


@cache
def _json(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((golden_dir() / f"{name}.json").read_text())
    return data


@cache
def _npz(name: str) -> dict[str, np.ndarray]:
    with np.load(golden_dir() / f"{name}.npz", allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def cases(kind: str) -> dict[str, dict[str, Any]]:
    """The cases of ``trajectories``, ``scenes`` or ``kernels``."""
    result: dict[str, dict[str, Any]] = _json(kind)["cases"]
    return result


def arrays(kind: str, case: str) -> dict[str, np.ndarray]:
    """``in.X`` / ``out.X`` arrays of one case, keyed without the case prefix."""
    prefix = f"{case}."
    return {k[len(prefix) :]: v for k, v in _npz(kind).items() if k.startswith(prefix)}


def asset(name: str) -> dict[str, np.ndarray]:
    prefix = f"{name}."
    return {k[len(prefix) :]: v for k, v in _npz("scene_assets").items() if k.startswith(prefix)}


ABSENT = "golden-absent"


def case_names(kind: str) -> list[str]:
    """Case names for parametrisation; ``[ABSENT]`` when the folder is absent (pass the list
    through ``absent_skips`` so that case skips with the place it was looked for)."""
    env = os.environ.get("STREAMEVAL_GOLDEN")
    root = Path(env) if env else REPO.parent / "shared" / "reference" / "golden"
    path = root / "worldatlas" / f"{kind}.json"
    if not path.is_file():
        return [ABSENT]
    return sorted(json.loads(path.read_text())["cases"])


def absent_skips(names: list[str]) -> list[Any]:
    """``names`` for ``parametrize``, the absent-golden placeholder marked as a skip: a user's
    clone has no reference data, and its tests must skip, never fail on the placeholder."""
    reason = "WorldAtlas golden vectors not here (set STREAMEVAL_GOLDEN)"
    return [
        pytest.param(n, marks=pytest.mark.skip(reason=reason)) if n == ABSENT else n for n in names
    ]

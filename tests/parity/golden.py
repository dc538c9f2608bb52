"""Locate and load the reference's golden outputs: the reference's outputs on generated inputs
(``$STREAMEVAL_GOLDEN``; not distributed).

By default the folder is ``shared/reference/golden`` beside the clone (where CI puts it); the
environment variable ``STREAMEVAL_GOLDEN`` names another place. Without it, every parity test skips
with a message saying where it looked: a user's clone has no golden data.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
ENV_VAR = "STREAMEVAL_GOLDEN"
TOL = 1e-9


def golden_dir() -> Path:
    """The golden folder, or a pytest skip naming where it was looked for."""
    env = os.environ.get(ENV_VAR)
    where = Path(env) if env else REPO.parent / "shared" / "reference" / "golden"
    if not (where / "README.md").is_file():
        pytest.skip(f"reference golden data not found at {where} (set {ENV_VAR} to its folder)")
    return where


def load(kind: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``<kind>.json`` and the arrays of ``<kind>.npz`` (read once; the npz is compressed)."""
    return _load(golden_dir(), kind)


@functools.lru_cache(maxsize=8)
def _load(root: Path, kind: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    with (root / f"{kind}.json").open(encoding="utf-8") as fh:
        doc = json.load(fh)
    with np.load(root / f"{kind}.npz") as z:
        arrays = {name: np.asarray(z[name]) for name in z.files}
    return doc, arrays


def packed(arr: np.ndarray, offsets: np.ndarray, k: int) -> np.ndarray:
    """Case k of a packed array (``offsets[k]`` to ``offsets[k+1] - 1``)."""
    return np.asarray(arr[int(offsets[k]) : int(offsets[k + 1])])


def close(got: float | None, want: float | None, what: str) -> None:
    """Equal within 1e-9 (absolute); None on both sides (not applicable) is equal too."""
    if want is None or got is None:
        assert got is None and want is None, f"{what}: got {got!r}, reference {want!r}"
        return
    assert abs(float(got) - float(want)) <= TOL, f"{what}: got {got!r}, reference {want!r}"

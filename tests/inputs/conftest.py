"""Shared builders for the input-layer tests (issue 10)."""

from __future__ import annotations

import sys
from pathlib import Path

_REPLAY_TESTS = str(Path(__file__).resolve().parent.parent / "replay")
if _REPLAY_TESTS not in sys.path:
    sys.path.insert(0, _REPLAY_TESTS)  # for ``from replay_synth import ...``

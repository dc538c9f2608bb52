"""A fresh ``arena_inputs`` folder per test (tests may damage it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cases.arena_synth import write_arena


@pytest.fixture
def arena(tmp_path: Path) -> Path:
    return write_arena(tmp_path / "arena_inputs")

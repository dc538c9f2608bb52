"""A memory_loop demo shared by the command-line tests that read one (test_cli_memory_loop,
test_cli_bad_sidecars): rendering and scoring it costs more than most of their checks, so a
worker does it once. Modules that use it share the ``cli-memory-loop`` xdist group, which
keeps them on that worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from streameval.cli.main import main

MEMORY_LOOP_MODEL = "procedural-world[clean]"
# a dolly out and back: the gate, both keystroke columns, memory_scene_f1 and the
# strafe/turn fit are all official on it (the bad-sidecar tests need each one)
MEMORY_LOOP_TRAJECTORY = "dolly_loop"


@pytest.fixture(scope="session")
def dolly_loop_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``demo --suite memory_loop --trajectory dolly_loop --loop-seconds 3`` (72 frames), its
    recording lossless with the pose, depth and intrinsics sidecars; no report (no test here
    reads one). The tests read it or copy it, never change it."""
    out = tmp_path_factory.mktemp("loops")
    argv = ["demo", "--no-tui", "--no-report", "--out", str(out), "--suite", "memory_loop"]
    assert main([*argv, "--trajectory", MEMORY_LOOP_TRAJECTORY, "--loop-seconds", "3"]) == 0
    return out

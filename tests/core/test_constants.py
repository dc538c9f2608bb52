"""The default frame rate is named once: ``streameval.constants.DEFAULT_FPS``. No other module
of the installed package types the float ``16.0`` (a rate of its own would have another name)."""

from __future__ import annotations

import ast
from pathlib import Path

from streameval import constants

ROOT = Path(__file__).resolve().parents[2]
SOURCE_FOLDERS = ("streameval", "protocol", "replay", "tui", "examples")


def sixteens(path: Path) -> list[int]:
    """Lines of ``path`` with the float literal 16.0 in code (comments and text left out)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, float)
        and node.value == constants.DEFAULT_FPS
    ]


def test_default_fps_is_typed_once() -> None:
    own = Path(constants.__file__).resolve()
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for folder in SOURCE_FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.resolve() != own
        for line in sixteens(path)
    ]
    assert not found, f"use streameval.constants.DEFAULT_FPS: {found}"


def test_the_walk_finds_a_planted_sixteen(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('"""16.0 in text."""\nfps = 16.0  # 16.0\nside = 16\n')
    assert sixteens(planted) == [2]


def test_default_fps_is_worldmarks_nominal_rate() -> None:
    from streameval.worlds.procedural_world.config import WorldConfig

    assert constants.DEFAULT_FPS == 16.0
    assert WorldConfig().fps == constants.DEFAULT_FPS

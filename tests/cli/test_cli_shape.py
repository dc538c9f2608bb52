"""One module shape for every command: ``cli/<command>.py`` with ``add_parser(sub)`` and
``run(args)``, registered once in ``cli.main.COMMANDS``; exit statuses only by their names in
``cli/exit_codes.py``, never a bare integer."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import streameval.cli
from streameval.cli.main import COMMANDS, build_parser

CLI = Path(streameval.cli.__file__).resolve().parent


def test_every_command_module_has_the_one_shape() -> None:
    for name, module in COMMANDS.items():
        assert getattr(module, "__name__", None) == f"streameval.cli.{name}"
        assert list(inspect.signature(module.add_parser).parameters) == ["sub"], name
        assert list(inspect.signature(module.run).parameters) == ["args"], name


def test_every_registered_command_has_its_parser(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    for name in COMMANDS:
        with pytest.raises(SystemExit) as done:
            parser.parse_args([name, "--help"])
        assert done.value.code == 0
        assert f"usage: streameval {name}" in capsys.readouterr().out


def bare_int_returns(source: str) -> list[int]:
    """Lines of ``return 0``-style statements (an int literal, or a conditional of them)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        values = (
            [node.value.body, node.value.orelse]
            if isinstance(node.value, ast.IfExp)
            else [node.value]
        )
        if any(isinstance(v, ast.Constant) and type(v.value) is int for v in values):
            lines.append(node.lineno)
    return sorted(lines)


def test_no_command_returns_a_bare_exit_status() -> None:
    found = {
        path.name: lines
        for path in sorted(CLI.glob("*.py"))
        if (lines := bare_int_returns(path.read_text(encoding="utf-8")))
    }
    assert not found, f"return a status from cli/exit_codes.py: {found}"


def test_the_check_finds_a_planted_bare_status() -> None:
    planted = "def run(a):\n    if a:\n        return 0\n    return EXIT_OK if a else 1\n"
    assert bare_int_returns(planted) == [3, 4]

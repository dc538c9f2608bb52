"""One exception tree: every exception class streameval defines is a ``StreamevalError``, or
is named here with the reason it is not. The command line turns ``BadInputError`` into exit 2
with one line; anything outside the tree reaching it is a bug."""

from __future__ import annotations

import importlib
import inspect

import pytest

from streameval.errors import (
    BadInputError,
    InvalidDataError,
    StreamevalError,
    one_line,
)
from tests.test_packaging import _modules as installed_modules

# Outside the tree on purpose, each with its reason.
NOT_ERRORS = {
    # the normal end of a stream (as StopAsyncIteration is): no handler of errors may catch it
    "streameval.core.events.EndOfStream",
}


def _modules() -> list[str]:
    """Every installed module, the mapped folders (protocol/, replay/, ...) included."""
    return [
        name
        for name, _ in installed_modules()
        if not name.endswith("__main__")  # runs the command line on import
    ]


def exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined (not merely imported) by a module of the package."""
    found: dict[str, type[BaseException]] = {}
    for name in _modules():
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == name:
                found[f"{name}.{cls.__qualname__}"] = cls
    return found


def test_the_walk_reaches_every_part() -> None:
    names = _modules()
    for part in ("protocol", "replay", "tui", "worlds", "transports", "metrics", "cli"):
        assert any(n.startswith(f"streameval.{part}.") for n in names), part
    found = exception_classes()
    assert "streameval.errors.WireError" in found
    assert "streameval.core.events.EndOfStream" in found


def test_the_tree_is_one_file() -> None:
    """Every exception class is defined in ``streameval/errors.py`` (as httpx keeps its tree in
    one module), but the documented end of a stream, which is not an error."""
    elsewhere = sorted(
        name for name in exception_classes() if not name.startswith("streameval.errors.")
    )
    assert elsewhere == sorted(NOT_ERRORS)


def test_every_exception_class_is_in_the_tree() -> None:
    outside = sorted(
        name
        for name, cls in exception_classes().items()
        if not issubclass(cls, StreamevalError) and name not in NOT_ERRORS
    )
    assert not outside, f"put these under streameval.errors.StreamevalError: {outside}"


def test_the_documented_exceptions_exist_and_stay_outside() -> None:
    found = exception_classes()
    for name in NOT_ERRORS:
        assert name in found and not issubclass(found[name], StreamevalError), name


@pytest.mark.parametrize(
    "name",
    [
        "streameval.errors.EpisodeNotStarted",
        "streameval.errors.HalfLifeUnavailable",
        "streameval.errors.TemplateError",
        "streameval.errors.MessageProblem",
    ],
)
def test_classes_brought_into_the_tree_are_caught_as_before(name: str) -> None:
    cls = exception_classes()[name]
    assert issubclass(cls, StreamevalError)
    before = RuntimeError if name.endswith("EpisodeNotStarted") else ValueError
    assert issubclass(cls, before)


def test_bad_input_is_one_line_naming_its_source() -> None:
    err = BadInputError("run/poses.npy", "not a 4x4 pose")
    assert str(err) == "run/poses.npy: not a 4x4 pose"
    assert issubclass(InvalidDataError, ValueError)


def test_one_line_folds_any_whitespace() -> None:
    assert one_line("  a\n\tb  \r\n c ") == "a b c"
    assert one_line("") == ""

"""Bounded JSON: a hostile file costs at most a few megabytes and milliseconds, never a crash.

The standard library parser recurses once per nesting level (``RecursionError`` near 1,000),
turns ``1e400`` into ``inf``, accepts ``NaN``/``Infinity`` and raises a bare ``ValueError`` for
integers over 4,300 digits. Each of those is refused here, before or while parsing, with a
``BadInputError`` naming the file.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from pathlib import Path
from typing import Any

from streameval.errors import BadInputError, one_line

# meta.json, episode.json and scores.json are a few kB; a log of a long episode a few MB.
MAX_JSON_BYTES = 16 * 1024 * 1024
# scores.json nests five levels (metrics.NAME.details.segments[i]); leave room, refuse abuse.
MAX_JSON_DEPTH = 64
# Frame indices and counts fit comfortably; a 5,000-digit integer is an attack, not data.
MAX_INT_DIGITS = 20

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def nesting_depth(text: str) -> int:
    """Deepest bracket nesting of JSON ``text`` (brackets inside strings do not count).

    Linear and iterative, so it can run before the recursive parser ever sees the text.
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(_STEP[c] for c in brackets), default=0)


def _parse_int(source: object, token: str) -> int:
    if len(token.lstrip("-")) > MAX_INT_DIGITS:
        raise BadInputError(source, f"integer with {len(token)} digits (at most {MAX_INT_DIGITS})")
    return int(token)


def _parse_float(source: object, token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise BadInputError(source, f"number {token[:40]} is out of range")
    return value


def _parse_constant(source: object, token: str) -> float:
    raise BadInputError(source, f"{token} is not a JSON number (only finite numbers are allowed)")


def parse_json_text(text: str, source: object, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse ``text`` under the limits above; ``source`` names the input in errors."""
    depth = nesting_depth(text)
    if depth > max_depth:
        raise BadInputError(source, f"JSON nested {depth} levels deep (at most {max_depth})")
    try:
        return json.loads(
            text,
            parse_int=lambda t: _parse_int(source, t),
            parse_float=lambda t: _parse_float(source, t),
            parse_constant=lambda t: _parse_constant(source, t),
        )
    except json.JSONDecodeError as exc:
        raise BadInputError(source, f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:  # unbalanced brackets can fool the depth count; never a traceback
        raise BadInputError(source, "JSON nested too deeply") from None


def read_text_bounded(path: Path, *, max_bytes: int = MAX_JSON_BYTES) -> str:
    """UTF-8 text of a regular file no larger than ``max_bytes``."""
    # Checked before opening: a FIFO or a device under a file's name would block or never end.
    if not path.is_file():
        what = "a directory" if path.is_dir() else "not a regular file (or a broken link)"
        raise BadInputError(path, what if path.exists() or path.is_symlink() else "missing")
    try:
        with path.open("rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise BadInputError(path, f"cannot read ({one_line(exc.strerror or str(exc))})") from None
    if len(data) > max_bytes:
        raise BadInputError(path, f"larger than {max_bytes // (1024 * 1024)} MB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInputError(path, f"not UTF-8 text (byte {exc.start})") from None


def read_json_file(path: Path, *, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """A bounded JSON document from ``path``; every problem is a ``BadInputError``."""
    return parse_json_text(read_text_bounded(path, max_bytes=max_bytes), path)


def read_json_object(path: Path, *, max_bytes: int = MAX_JSON_BYTES) -> dict[str, Any]:
    """Like ``read_json_file``, for documents that must be a JSON object."""
    doc = read_json_file(path, max_bytes=max_bytes)
    if not isinstance(doc, dict):
        raise BadInputError(path, f"expected a JSON object, got {type(doc).__name__}")
    return doc


def read_json_object_if_any(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``, or ``{}`` when there is none or it is not one: for the
    optional side files a report or a verdict reads when they are there."""
    if not path.is_file():
        return {}
    try:
        return read_json_object(path)
    except BadInputError:
        return {}

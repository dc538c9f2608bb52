"""Message templates of a server profile: TOML tables whose strings hold placeholders.

A template is data shaped like the message the server expects (a TOML table becomes a JSON
object or a msgpack map). A string that is exactly one placeholder, ``"{keycode}"``, becomes
the value itself with its type (a number stays a number: world-arcade wants ``87``, not
``"87"``); a placeholder inside a longer string is substituted as text; ``{{`` and ``}}`` are
literal braces. Placeholders (docs/serve-formats.md#writing-a-profile): ``{key}`` the server's
name of the key, ``{keycode}`` its browser keyCode, ``{timestamp}`` seconds since the epoch,
``{speed}``, ``{chunk}`` the chunk number, ``{frames}`` frames per chunk, ``{poses}`` and
``{intrinsics}`` (pose semantics), ``{episode}``, ``{mouse_dx}`` / ``{mouse_dy}`` the held
key's mouse motion per frame (``[keys.mouse]``; 0 for keys without one), ``{buttons}`` the
held key's name as a list (empty for no key and for a key that is only a mouse motion); and
what a benchmark case sends (``streameval.cases.conditioning``): ``{image_base64}``,
``{image_mime}``, ``{image_path}``, ``{prompt}``, ``{intrinsics}``, ``{image_width}``,
``{image_height}``, ``{case}``, ``{seed}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import msgpack

from streameval.cases.conditioning import PLACEHOLDERS as CASE_PLACEHOLDERS
from streameval.errors import TemplateError

KEY_PLACEHOLDERS = (
    "key",
    "keycode",
    "timestamp",
    "speed",
    "chunk",
    "frames",
    "poses",
    "intrinsics",
    "episode",
    "mouse_dx",
    "mouse_dy",
    "buttons",
)
PLACEHOLDERS = tuple(dict.fromkeys(KEY_PLACEHOLDERS + CASE_PLACEHOLDERS))
"""Every placeholder a template may hold: the key channel's and a case's (``{intrinsics}`` is
the pose camera's 3x3 matrix in a ``pose`` template, the case's ``[fx, fy, cx, cy]`` in
original pixels in every other)."""
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_WHOLE = re.compile(r"^\{([a-z_][a-z0-9_]*)\}$")
MAX_TEMPLATE_DEPTH = 8

BROWSER_KEYCODES = {"ArrowLeft": 37, "ArrowUp": 38, "ArrowRight": 39, "ArrowDown": 40, " ": 32}
"""The browser's legacy ``KeyboardEvent.keyCode`` of the names that are not one letter."""


def keycode_of(name: str) -> int | None:
    """The browser keyCode of a key name: letters and digits are their upper-case ASCII code
    (``w`` → 87), arrows 37–40; None when the name has no well-known code."""
    if name in BROWSER_KEYCODES:
        return BROWSER_KEYCODES[name]
    if len(name) == 1 and name.isascii() and name.isalnum():
        return ord(name.upper())
    return None


def placeholders_in(template: Any, depth: int = 0) -> set[str]:
    """Every placeholder a template uses (unknown ones included: the validator names them)."""
    if depth > MAX_TEMPLATE_DEPTH:
        raise TemplateError(f"nested deeper than {MAX_TEMPLATE_DEPTH} levels")
    if isinstance(template, str):
        return {m.group(1) for m in _PLACEHOLDER.finditer(template) if m.group(1) is not None}
    if isinstance(template, Mapping):
        return set().union(*(placeholders_in(v, depth + 1) for v in template.values()))
    if isinstance(template, list):
        return set().union(*(placeholders_in(v, depth + 1) for v in template))
    return set()


def render(
    template: Any,
    values: Mapping[str, Any],
    depth: int = 0,
    *,
    optional: frozenset[str] | set[str] = frozenset(),
) -> Any:
    """The message: ``template`` with every placeholder replaced by its value. A table field
    that is exactly one placeholder named in ``optional`` and without a value is left out
    (a run without cases sends ``configure`` without the case's fields: the server's
    defaults, as before cases existed); anywhere else a missing value does not render."""
    if depth > MAX_TEMPLATE_DEPTH:
        raise TemplateError(f"nested deeper than {MAX_TEMPLATE_DEPTH} levels")
    if isinstance(template, Mapping) and optional:
        return {
            str(k): render(v, values, depth + 1, optional=optional)
            for k, v in template.items()
            if not _left_out(v, values, optional)
        }
    if isinstance(template, list) and optional:
        return [render(v, values, depth + 1, optional=optional) for v in template]
    if isinstance(template, str):
        whole = _WHOLE.match(template)
        if whole:
            return _value(whole.group(1), values)

        def text(match: re.Match[str]) -> str:
            if match.group(0) in ("{{", "}}"):
                return match.group(0)[0]
            return str(_value(match.group(1), values))

        return _PLACEHOLDER.sub(text, template)
    if isinstance(template, Mapping):
        return {str(k): render(v, values, depth + 1) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, values, depth + 1) for v in template]
    return template


def _left_out(value: Any, values: Mapping[str, Any], optional: frozenset[str] | set[str]) -> bool:
    whole = _WHOLE.match(value) if isinstance(value, str) else None
    return whole is not None and whole.group(1) in optional and values.get(whole.group(1)) is None


def _value(name: str, values: Mapping[str, Any]) -> Any:
    # a style may supply placeholders of its own (profiles/ondemand.py): known when given
    if name not in PLACEHOLDERS and name not in values:
        raise TemplateError(f"unknown placeholder {{{name}}} (known: {', '.join(PLACEHOLDERS)})")
    if values.get(name) is None:
        raise TemplateError(f"no value for {{{name}}} here")
    return values[name]


def encode(message: Any, codec: str) -> str | bytes:
    """A rendered message as the wire wants it: JSON text or msgpack bytes."""
    try:
        if codec == "msgpack":
            packed: bytes = msgpack.packb(message, use_bin_type=True)
            return packed
        return json.dumps(message, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TemplateError(f"cannot be written as {codec}: {exc}") from None

"""The profile ``probe --write-profile`` writes: the base profile's own TOML, with ``[keys]
names`` set to what the probe found (and ``fps`` to what the server delivers), so it reads,
attaches and documents itself like the built-ins (docs/serve-formats.md#writing-a-profile).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from streameval.core.atomic import write_text_atomic
from streameval.errors import BadInputError
from streameval.protocol.keys import KEYS
from streameval.transports.profiles import ServerProfile, parse_profile

_HEADER = re.compile(r"^\s*\[")
_TOP_FIELD = r"^{}\s*="


def names_line(names: dict[str, str]) -> str:
    pairs = ", ".join(f"{k} = {json.dumps(names[k])}" for k in KEYS)
    return f"names = {{ {pairs} }}"


def profile_text(
    base: ServerProfile,
    names: dict[str, str],
    *,
    fps: float | None,
    comment: str,
    response_s: float | None = None,
) -> str:
    """The base profile's file with ``names`` (every key of ``KEYS``), ``fps`` and
    ``response_s`` (the measured key → picture time, so a run with keys too short for it is
    told before it starts) replaced; ``comment`` heads the file. Checked by reading it back:
    what is written attaches."""
    text = Path(base.path).read_text(encoding="utf-8")
    # the base profile's comments described its own names and fps, not what was found
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    lines = _set_top(lines, "name", json.dumps(f"{base.name}-probed"))
    lines = _set_top(lines, "description", json.dumps(f"{base.description} (keys probed)"))
    if fps is not None:
        lines = _set_top(lines, "fps", f"{fps:g}")
    if response_s is not None and response_s > 0:
        lines = _set_top(lines, "response_s", f"{response_s:.2f}")
    lines = _set_names(lines, names_line(names))
    head = [f"# {line}".rstrip() for line in comment.splitlines()]
    out = "\n".join([*head, *lines]) + "\n"
    written = parse_profile(out, "the written profile")
    if written.key_names() != {k: names[k] for k in KEYS}:  # pragma: no cover - a writer bug
        raise BadInputError(base.path, "the written profile does not read back its key names")
    return out


def _set_top(lines: list[str], field: str, value: str) -> list[str]:
    """Set a top-level field (before the first table header), adding it when absent."""
    end = next((i for i, line in enumerate(lines) if _HEADER.match(line)), len(lines))
    pattern = re.compile(_TOP_FIELD.format(re.escape(field)))
    for i in range(end):
        if pattern.match(lines[i]):
            return [*lines[:i], f"{field} = {value}", *lines[i + 1 :]]
    return [*lines[:end], f"{field} = {value}", *lines[end:]]


def _set_names(lines: list[str], line: str) -> list[str]:
    """``names`` in ``[keys]`` replaced (or added; the table too when the profile has none)."""
    start = next((i for i, ln in enumerate(lines) if ln.strip() == "[keys]"), None)
    if start is None:
        return [*lines, "", "[keys]", line]
    end = next((i for i in range(start + 1, len(lines)) if _HEADER.match(lines[i])), len(lines))
    pattern = re.compile(_TOP_FIELD.format("names"))
    body = [ln for ln in lines[start + 1 : end] if not pattern.match(ln)]
    found = "# what each name does was measured by streameval probe"
    return [*lines[: start + 1], found, line, *body, *lines[end:]]


def write_profile(path: Path, text: str) -> None:
    try:
        write_text_atomic(path, text)
    except OSError as exc:
        raise BadInputError(path, f"cannot write the profile: {exc.strerror or exc}") from None

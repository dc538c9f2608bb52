"""The profile ``probe --write-profile`` writes: the base profile's own TOML, with ``[keys]
names`` set to what the probe found (and ``fps`` to what the server delivers), so it reads,
attaches and documents itself like the built-ins (docs/serve-formats.md#writing-a-profile).
A key found to be a mouse motion (``mouse:DX,DY``) is written as ``[keys] mouse`` and has no
name (no button), whatever the base profile said for it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from streameval.core.atomic import write_text_atomic
from streameval.errors import BadInputError
from streameval.protocol.keys import KEYS
from streameval.transports.profiles import ServerProfile, parse_profile
from streameval.transports.profiles.mouse_names import parse_mouse_name

_HEADER = re.compile(r"^\s*\[")
_TOP_FIELD = r"^{}\s*="


def names_line(names: dict[str, str]) -> str:
    pairs = ", ".join(f"{k} = {json.dumps(names[k])}" for k in KEYS if k in names)
    return f"names = {{ {pairs} }}"


def mouse_line(motions: dict[str, tuple[float, float]]) -> str:
    parts = []
    for key in KEYS:
        if key in motions:
            dx, dy = motions[key]
            fields = [f"dx = {dx:.6g}" if dx else "", f"dy = {dy:.6g}" if dy else ""]
            parts.append(f"{key} = {{ {', '.join(f for f in fields if f)} }}")
    return f"mouse = {{ {', '.join(parts)} }}"


def profile_text(
    base: ServerProfile,
    names: dict[str, str],
    *,
    fps: float | None,
    comment: str,
    response_s: float | None = None,
) -> str:
    """The base profile's file with ``names`` (every key of ``KEYS``; a ``mouse:DX,DY`` name
    goes to ``[keys] mouse``), ``fps`` and ``response_s`` (the measured key → picture time, so
    a run with keys too short for it is told before it starts) replaced; ``comment`` heads the
    file. Checked by reading it back: what is written attaches and sends what was found."""
    text = Path(base.path).read_text(encoding="utf-8")
    # the base profile's comments described its own names and fps, not what was found
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    lines = _set_top(lines, "name", json.dumps(f"{base.name}-probed"))
    lines = _set_top(lines, "description", json.dumps(f"{base.description} (keys probed)"))
    if fps is not None:
        lines = _set_top(lines, "fps", f"{fps:g}")
    if response_s is not None and response_s > 0:
        lines = _set_top(lines, "response_s", f"{response_s:.2f}")
    motions = {k: m for k in KEYS if (m := parse_mouse_name(names.get(k))) is not None}
    buttons = {k: names[k] for k in KEYS if k not in motions}
    lines = _drop_table(lines, "[keys.mouse]")
    lines = _set_keys(lines, "mouse", mouse_line(motions) if motions else None)
    lines = _set_keys(lines, "names", names_line(buttons), comment=True)
    head = [f"# {line}".rstrip() for line in comment.splitlines()]
    out = "\n".join([*head, *lines]) + "\n"
    written = parse_profile(out, "the written profile")
    sends: dict[str, object] = {k: written.key_names()[k] for k in buttons}
    sends.update({k: written.keys.mouse.get(k) for k in motions})
    wanted: dict[str, object] = {**buttons, **motions}
    if sends != wanted or set(written.keys.mouse) != set(motions):  # pragma: no cover - a bug
        raise BadInputError(base.path, "the written profile does not read back its keys")
    return out


def _set_top(lines: list[str], field: str, value: str) -> list[str]:
    """Set a top-level field (before the first table header), adding it when absent."""
    end = next((i for i, line in enumerate(lines) if _HEADER.match(line)), len(lines))
    pattern = re.compile(_TOP_FIELD.format(re.escape(field)))
    for i in range(end):
        if pattern.match(lines[i]):
            return [*lines[:i], f"{field} = {value}", *lines[i + 1 :]]
    return [*lines[:end], f"{field} = {value}", *lines[end:]]


def _drop_table(lines: list[str], header: str) -> list[str]:
    """``lines`` without the table ``header`` (its header line and its body)."""
    start = next((i for i, ln in enumerate(lines) if ln.strip() == header), None)
    if start is None:
        return lines
    end = next((i for i in range(start + 1, len(lines)) if _HEADER.match(lines[i])), len(lines))
    return [*lines[:start], *lines[end:]]


def _set_keys(lines: list[str], field: str, line: str | None, comment: bool = False) -> list[str]:
    """``field`` in ``[keys]`` replaced by ``line`` (added, the table too when the profile has
    none; removed when ``line`` is None)."""
    start = next((i for i, ln in enumerate(lines) if ln.strip() == "[keys]"), None)
    if start is None:
        return lines if line is None else [*lines, "", "[keys]", line]
    end = next((i for i in range(start + 1, len(lines)) if _HEADER.match(lines[i])), len(lines))
    pattern = re.compile(_TOP_FIELD.format(re.escape(field)))
    body = [ln for ln in lines[start + 1 : end] if not pattern.match(ln)]
    found = ["# what each name does was measured by streameval probe"] if comment else []
    new = [] if line is None else [*found, line]
    return [*lines[: start + 1], *new, *body, *lines[end:]]


def write_profile(path: Path, text: str) -> None:
    try:
        write_text_atomic(path, text)
    except OSError as exc:
        raise BadInputError(path, f"cannot write the profile: {exc.strerror or exc}") from None

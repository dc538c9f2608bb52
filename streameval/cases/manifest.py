"""A case manifest: any benchmark's cases, one JSON object a line.

WorldMark publishes a folder layout (``cases.arena``); other benchmarks publish lists. A
manifest writes each case out, so that any of them runs as WorldMark's does::

    # two WorldMark cases of one image, and a memory loop from a photograph
    {"case": "000_001", "image": "img/000.jpg", "prompt": "A street.", "actions": 1}
    {"case": "000_006", "image": "img/000.jpg", "intrinsics": [900, 900, 511, 383], "actions": "WS"}
    {"case": "street", "suite": "memory_loop", "image": "street.png", "trajectory": "dolly_loop"}

Fields (only ``case`` is always required):

- ``case``: the case's name, unique within its set (letters, digits, ``. _ - + = @ ,``);
- ``set``: the group it is scored in (``first_view/real``); the suite's name when absent;
- ``suite``: ``"worldmark"`` (keys held in turn; the default) or ``"memory_loop"``;
- ``image``: the starting image (JPEG or PNG), a path relative to the manifest;
- ``prompt``: its caption; ``intrinsics``: ``[fx, fy, cx, cy]`` in the image's pixels;
- ``actions`` (worldmark, required): a WorldMark action id 1..15, or the keys as a string
  (``"WS"``, any of W S A D L R);
- ``trajectory`` (memory_loop): a trajectory name (``protocol.memory_loop.TRAJECTORIES``) or
  its list of tokens; absent, the run's ``--trajectory`` applies.

Blank lines and lines starting with ``#`` are skipped. Lines are split on ``\\n`` only (a
caption may hold U+2028, which JSON allows raw). A line that is not a JSON object, an unknown
field, a value of the wrong type, a file that is not there, a case named twice within its set:
each is one ``BadInputError`` line, ``manifest.jsonl:LINE: what is wrong``, before anything runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from streameval.cases.model import Case, CaseSet, parse_intrinsics
from streameval.errors import BadInputError, did_you_mean
from streameval.inputs.jsonfile import parse_json_text, read_text_bounded
from streameval.inputs.paths import present
from streameval.protocol.keys import KEYS
from streameval.protocol.memory_loop import MEMORY_LOOP_SUITE, TOKEN_KEY, TRAJECTORIES
from streameval.protocol.suites import WORLDMARK, WORLDMARK_SUITE

FIELDS = ("case", "set", "suite", "image", "prompt", "intrinsics", "actions", "trajectory")
SUITES = (WORLDMARK_SUITE, MEMORY_LOOP_SUITE)
# A case name becomes a results folder and a video name: keep it a plain file name.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=@,-]{0,99}")
MAX_SET_LEVELS = 3
MAX_KEYS = 64
_ACTION_OF_KEYS = {keys: action for action, keys in WORLDMARK.items()}


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _name(value: Any, where: str, what: str) -> str:
    if not isinstance(value, str):
        raise BadInputError(where, f"{what} must be a string, not {_kind(value)}")
    if not _NAME.fullmatch(value):
        raise BadInputError(
            where,
            f"{what} {value[:40]!r} must be 1-100 letters, digits or . _ - + = @ , "
            "(starting with a letter or digit)",
        )
    return value


def _set_name(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise BadInputError(where, f"set must be a string, not {_kind(value)}")
    parts = value.split("/")
    if len(parts) > MAX_SET_LEVELS:
        raise BadInputError(where, f"set {value[:40]!r} has more than {MAX_SET_LEVELS} levels")
    for part in parts:
        _name(part, where, "each level of set")
    return value


def _optional_str(doc: dict[str, Any], field: str, where: str) -> str | None:
    value = doc.get(field)
    if value is not None and not isinstance(value, str):
        raise BadInputError(where, f"{field} must be a string, not {_kind(value)}")
    return value


def _actions(value: Any, where: str) -> tuple[int | None, str]:
    """(WorldMark action id or None, key string) from an id or a key string."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise BadInputError(
            where, f'actions must be an action id 1-15 or keys like "WS", not {_kind(value)}'
        )
    if isinstance(value, int):
        if value not in WORLDMARK:
            raise BadInputError(where, f"action {value} is outside 1-15")
        return value, WORLDMARK[value]
    keys = value.strip().upper()
    if not keys or len(keys) > MAX_KEYS or any(k not in KEYS for k in keys):
        raise BadInputError(
            where, f"actions {value[:40]!r} must be 1-{MAX_KEYS} of the keys {' '.join(KEYS)}"
        )
    return _ACTION_OF_KEYS.get(keys), keys


def _trajectory(value: Any, where: str) -> tuple[str | tuple[str, ...], str]:
    """(the trajectory as given, its keys) from a name or a list of tokens."""
    if isinstance(value, str):
        if value not in TRAJECTORIES:
            raise BadInputError(
                where,
                f"unknown trajectory {value[:40]!r} (known: {', '.join(TRAJECTORIES)})"
                + did_you_mean(value, list(TRAJECTORIES)),
            )
        return value, "".join(TOKEN_KEY[t] for t in TRAJECTORIES[value])
    if isinstance(value, list) and value and len(value) <= MAX_KEYS:
        for token in value:
            if not isinstance(token, str) or token not in TOKEN_KEY:
                raise BadInputError(
                    where, f"trajectory token {token!r:.40} is not one of {', '.join(TOKEN_KEY)}"
                )
        return tuple(value), "".join(TOKEN_KEY[t] for t in value)
    raise BadInputError(
        where, f"trajectory must be a trajectory name or 1-{MAX_KEYS} tokens, not {_kind(value)}"
    )


def _image(value: Any, base: Path, where: str) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or "\x00" in value:
        shown = repr(value[:40]) if isinstance(value, str) else _kind(value)
        raise BadInputError(
            where,
            f"image must be a path, not {shown}",
        )
    path = base / value
    try:
        found, regular = present(path), path.is_file()
    except (OSError, ValueError):  # a name no file system can hold (a lone surrogate)
        raise BadInputError(where, f"image {value[:40]!r} is not a usable path") from None
    if not found:
        shown = str(path) if str(path).isprintable() else repr(str(path))  # one line: "\n"
        raise BadInputError(where, f"image {value[:200]!r} is missing (looked for {shown})")
    if not regular:
        raise BadInputError(where, f"image {value[:200]!r} is not a regular file")
    return path


def case_from_line(doc: Any, base: Path, where: str) -> Case:
    """One manifest line's case; ``base`` is the manifest's folder, ``where`` names the line."""
    if not isinstance(doc, dict):
        raise BadInputError(where, f"expected a JSON object, got {_kind(doc)}")
    for field in doc:
        if field not in FIELDS:
            raise BadInputError(
                where,
                f"unknown field {field[:40]!r} (fields: {', '.join(FIELDS)})"
                + did_you_mean(field, FIELDS),
            )
    if "case" not in doc:
        raise BadInputError(where, 'no "case" field (the case\'s name)')
    name = _name(doc["case"], where, "case")
    suite = doc.get("suite", WORLDMARK_SUITE)
    if suite not in SUITES:
        shown = repr(suite[:40]) if isinstance(suite, str) else _kind(suite)
        raise BadInputError(
            where,
            f"suite {shown} is not one of {', '.join(SUITES)}"
            + (did_you_mean(suite, SUITES) if isinstance(suite, str) else ""),
        )
    set_name = _set_name(doc.get("set", suite), where)
    image_path = _image(doc.get("image"), base, where)
    prompt = _optional_str(doc, "prompt", where)
    intrinsics = None
    if doc.get("intrinsics") is not None:
        if image_path is None:
            raise BadInputError(where, "intrinsics without an image (they are in its pixels)")
        intrinsics = parse_intrinsics(doc["intrinsics"], where)
    action: int | None = None
    keys: str | None = None
    trajectory: str | tuple[str, ...] | None = None
    if suite == WORLDMARK_SUITE:
        if "trajectory" in doc:
            raise BadInputError(
                where, "trajectory is for memory_loop cases; a worldmark case takes actions"
            )
        if "actions" not in doc:
            raise BadInputError(where, 'no "actions" (an action id 1-15 or keys like "WS")')
        action, keys = _actions(doc["actions"], where)
    else:
        if "actions" in doc:
            raise BadInputError(
                where, "actions are for worldmark cases; a memory_loop case takes a trajectory"
            )
        if doc.get("trajectory") is not None:
            trajectory, keys = _trajectory(doc["trajectory"], where)
    image_id = doc["image"] if image_path is not None else None
    return Case(
        name=name,
        set=set_name,
        suite=suite,
        image_id=image_id,
        action=action,
        keys=keys,
        image_path=image_path,
        prompt=prompt,
        intrinsics=intrinsics,
        trajectory=trajectory,
        origin=where,
    )


def index_manifest(path: Path) -> CaseSet:
    """The cases of a manifest, every line checked; images are found but not yet read
    (``images.attach_image_facts`` reads them)."""
    text = read_text_bounded(path).removeprefix("\ufeff")
    base = path.parent
    cases: list[Case] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        where = f"{path}:{number}"
        case = case_from_line(parse_json_text(stripped, where), base, where)
        if case.key in first_line:
            raise BadInputError(
                where,
                f"case {case.name!r} of set {case.set!r} again "
                f"(first on line {first_line[case.key]})",
            )
        first_line[case.key] = number
        cases.append(case)
    if not cases:
        raise BadInputError(path, "no cases (a manifest holds one JSON object a line)")
    return CaseSet(tuple(cases), path, "manifest")

"""Per-frame action logs and keystroke logs, parsed and validated up front.

A bad line is reported with the file and the line number (``unknown key 'X' at line 7``), so a
user can open the file and fix it; nothing here guesses or skips.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from streameval.protocol.keys import KEYS, NO_KEY, parse_key
from streameval.replay.layout import read_json

from streameval.core.events import ChunkDone, KeySent
from streameval.errors import BadInputError, UnknownKeyError
from streameval.inputs.arrays import load_npy
from streameval.inputs.jsonfile import parse_json_text, read_text_bounded

# A log line is a flat object; a little nesting for extra fields, never more.
_MAX_LINE_DEPTH = 8


@dataclass(frozen=True, slots=True)
class ActionLog:
    """The key that conditioned each frame, and the wall time it arrived when recorded live."""

    keys: tuple[str, ...]
    t_wall: tuple[float | None, ...] | None = None

    def __len__(self) -> int:
        return len(self.keys)


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; a line that is not an object is an error."""
    text = read_text_bounded(path)
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = parse_json_text(line, path, max_depth=_MAX_LINE_DEPTH)
        except BadInputError as exc:
            raise BadInputError(path, f"line {lineno}: {exc.problem}") from None
        if not isinstance(obj, dict):
            raise BadInputError(path, f"line {lineno} is not a JSON object")
        yield lineno, obj


def _key_at(path: Path, value: object, where: str) -> str:
    try:
        return parse_key(value)
    except UnknownKeyError:
        raise BadInputError(
            path, f"unknown key {value!r} at {where} (expected one of {' '.join(KEYS)} or '-')"
        ) from None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _wall_time(path: Path, value: object, lineno: int) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadInputError(path, f"line {lineno}: t_wall {value!r} is not a finite number")
    return float(value)


def read_actions_jsonl(path: Path) -> ActionLog:
    """``actions.jsonl``: ``{"frame": i, "key": "W"}`` per frame, frames contiguous from 0."""
    keys: list[str] = []
    walls: list[float | None] = []
    for lineno, obj in _json_lines(path):
        frame = obj.get("frame")
        if not _is_int(frame):
            raise BadInputError(path, f"line {lineno}: 'frame' must be an integer, got {frame!r}")
        if frame != len(keys):
            raise BadInputError(
                path, f"line {lineno}: frame {frame}, expected {len(keys)} (frames run 0, 1, ...)"
            )
        if "key" not in obj:
            raise BadInputError(path, f"line {lineno}: no 'key'")
        keys.append(_key_at(path, obj["key"], f"line {lineno}"))
        walls.append(_wall_time(path, obj.get("t_wall"), lineno))
    if not keys:
        raise BadInputError(path, "no frames in the action log")
    has_wall = any(t is not None for t in walls)
    return ActionLog(tuple(keys), tuple(walls) if has_wall else None)


def read_keys_jsonl(path: Path) -> tuple[KeySent, ...]:
    """``keys.jsonl``: every keystroke sent live, ``{"key", "frame", "t_wall"}``, in send order."""
    sent: list[KeySent] = []
    for lineno, obj in _json_lines(path):
        key = _key_at(path, obj.get("key"), f"line {lineno}")
        frame = obj.get("frame")
        if not isinstance(frame, int) or isinstance(frame, bool) or frame < 0:
            raise BadInputError(path, f"line {lineno}: 'frame' must be an integer >= 0")
        t_wall = _wall_time(path, obj.get("t_wall"), lineno)
        if t_wall is None:
            raise BadInputError(path, f"line {lineno}: no 't_wall'")
        sent.append(KeySent(key=key, frame=frame, t_wall=t_wall))
    return tuple(sent)


def _stat_value(path: Path, value: object, lineno: int, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadInputError(path, f"line {lineno}: stats {name!r} {value!r} is not a finite number")
    return float(value)


def read_chunks_jsonl(path: Path) -> tuple[ChunkDone, ...]:
    """``chunks.jsonl``: the chunk boundaries a live run saw, ``{"chunk", "start", "frames",
    "t_wall", "origin", "stats"}`` per chunk, in order (docs/serve-formats.md#chunks)."""
    chunks: list[ChunkDone] = []
    for lineno, obj in _json_lines(path):
        numbers = [obj.get(name) for name in ("chunk", "start", "frames")]
        if not all(_is_int(v) and v >= 0 for v in numbers):  # type: ignore[operator]
            raise BadInputError(
                path, f"line {lineno}: 'chunk', 'start' and 'frames' must be integers >= 0"
            )
        t_wall = _wall_time(path, obj.get("t_wall"), lineno)
        stats = obj.get("stats", {})
        if not isinstance(stats, dict) or len(stats) > 32:
            raise BadInputError(path, f"line {lineno}: 'stats' must be an object of numbers")
        chunks.append(
            ChunkDone(
                index=int(obj["chunk"]),
                start=int(obj["start"]),
                frames=int(obj["frames"]),
                t_wall=0.0 if t_wall is None else t_wall,
                origin=str(obj.get("origin", "server"))[:32],
                stats={str(k): _stat_value(path, v, lineno, str(k)) for k, v in stats.items()},
            )
        )
    return tuple(chunks)


def read_actions_json(path: Path) -> ActionLog:
    """``actions.json``: a JSON list with one key per frame, e.g. ``["W", "W", "A", ...]``."""
    data = read_json(path)
    if not isinstance(data, list):
        raise BadInputError(path, "expected a JSON list of keys, one per frame")
    if not data:
        raise BadInputError(path, "no frames in the action list")
    return ActionLog(tuple(_key_at(path, v, f"index {i}") for i, v in enumerate(data)))


def read_actions_onehot(path: Path) -> ActionLog:
    """``actions.npy``: (T, 6) one-hot rows in W S A D L R order; an all-zero row is no key."""
    arr = load_npy(path)
    if arr.ndim != 2 or arr.shape[1] != len(KEYS) or arr.shape[0] == 0:
        raise BadInputError(
            path, f"shape {arr.shape}, expected (frames, {len(KEYS)}) one-hot in W S A D L R order"
        )
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise BadInputError(path, f"dtype {arr.dtype} is not numeric")
    pressed = arr != 0
    ones = arr == 1
    not_binary = np.flatnonzero((pressed & ~ones).any(axis=1))
    if not_binary.size:
        row = int(not_binary[0])
        raise BadInputError(path, f"row {row} is not one-hot: {arr[row].tolist()}")
    multi = np.flatnonzero(pressed.sum(axis=1) > 1)
    if multi.size:
        row = int(multi[0])
        held = " ".join(k for k, on in zip(KEYS, pressed[row], strict=True) if on)
        raise BadInputError(path, f"row {row} presses several keys at once ({held})")
    index = pressed.argmax(axis=1)
    keys = tuple(
        KEYS[int(j)] if any_on else NO_KEY
        for j, any_on in zip(index, pressed.any(axis=1), strict=True)
    )
    return ActionLog(keys)

"""Published leaderboards, kept as data beside the code: the rows a benchmark's authors
published, with where and when they were read and under what conditions they were measured.

``streameval table RESULTS --published worldmark[:SPLIT]`` puts a user's rows beside them
(``leaderboard.beside``). One JSON file per benchmark in this folder (``worldmark.json``:
WorldMark's four splits as its ``docs/index.html`` publishes them); its column names are the
catalog's (``metrics/registry.py``), mapped once when the file was written, so a published
value and a user's value of the same column mean the same thing. The numbers are never
computed here: a test checks them against the published page's values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from streameval.errors import BadInputError

PUBLISHED_FORMAT = "streameval.published/1"
# WorldMark's tab ids (``tbl-fp-real`` ...) and short names are accepted for its splits
_SPLIT_ALIASES = {
    "fp-real": "first_view/real",
    "fp-style": "first_view/style",
    "tp-real": "third_view/real",
    "tp-style": "third_view/style",
    "first/real": "first_view/real",
    "first/style": "first_view/style",
    "third/real": "third_view/real",
    "third/style": "third_view/style",
}


@dataclass(frozen=True, slots=True)
class PublishedRow:
    """One published model's values, by catalog column name (0–100, higher is better)."""

    model: str
    values: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class PublishedSplit:
    """One published table: a split (named as our case sets are, ``first_view/real``), its
    label as published and its rows in the published order."""

    name: str
    label: str
    rows: tuple[PublishedRow, ...]


@dataclass(frozen=True, slots=True)
class PublishedBoard:
    """A benchmark's published leaderboard: splits, source (URL, commit, date) and the
    conditions its numbers were measured under (offline, how many videos, which backends)."""

    name: str
    title: str
    source: Mapping[str, Any]
    conditions: Mapping[str, Any]
    splits: Mapping[str, PublishedSplit]

    @property
    def conditions_text(self) -> str:
        """One line: how the published numbers were measured."""
        backends = self.conditions.get("backends", {})
        names = ", ".join(str(v) for v in backends.values()) if isinstance(backends, dict) else ""
        summary = str(self.conditions.get("summary", ""))
        return f"{summary} ({names})" if names else summary

    @property
    def source_text(self) -> str:
        """One line: where the numbers were read, at which commit and date."""
        commit = str(self.source.get("commit", ""))[:12]
        return f"{self.source.get('url', '')} (commit {commit}, {self.source.get('date', '')})"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "source": dict(self.source),
            "conditions": dict(self.conditions),
            "splits": list(self.splits),
        }


def available() -> tuple[str, ...]:
    """The published boards this installation holds (``worldmark``, ...)."""
    folder = resources.files(__package__)
    return tuple(
        sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))
    )


def load_board(name: str) -> PublishedBoard:
    """The published board ``name``; ``BadInputError`` naming the known ones otherwise."""
    if name not in available():
        raise BadInputError(
            "--published", f"no published table {name!r}; available: {', '.join(available())}"
        )
    text = resources.files(__package__).joinpath(f"{name}.json").read_text(encoding="utf-8")
    return _board(name, json.loads(text))


def _board(name: str, doc: Mapping[str, Any]) -> PublishedBoard:
    """Parse and check one board's document (the file ships with the package, but a bad edit
    must fail loudly rather than rank against a wrong number)."""
    if doc.get("format") != PUBLISHED_FORMAT:
        raise BadInputError(f"{name}.json", f"format is not {PUBLISHED_FORMAT}")
    low, high = doc.get("scale", [0, 100])
    splits: dict[str, PublishedSplit] = {}
    for split, entry in doc["splits"].items():
        rows = []
        for row in entry["rows"]:
            values = {str(k): float(v) for k, v in row["values"].items()}
            bad = [k for k, v in values.items() if not low <= v <= high]
            if bad:
                raise BadInputError(f"{name}.json", f"{row['model']}: {bad[0]} outside the scale")
            rows.append(PublishedRow(str(row["model"]), values))
        splits[split] = PublishedSplit(split, str(entry.get("label", split)), tuple(rows))
    return PublishedBoard(
        name, str(doc.get("title", name)), doc["source"], doc["conditions"], splits
    )


def parse_published(spec: str) -> tuple[PublishedBoard, str | None]:
    """``worldmark`` or ``worldmark:SPLIT`` → (board, split or None); a bad name or split is a
    ``BadInputError`` naming what is known."""
    name, _, split = spec.partition(":")
    board = load_board(name.strip())
    if not split:
        return board, None
    canonical = _SPLIT_ALIASES.get(split.strip(), split.strip())
    if canonical not in board.splits:
        raise BadInputError(
            "--published",
            f"{board.name} has no split {split!r}; its splits: {', '.join(board.splits)}",
        )
    return board, canonical


def describe_available() -> list[str]:
    """One line per board and split, for ``--published`` without a value."""
    lines = []
    for name in available():
        board = load_board(name)
        lines.append(f"{name}: {board.title}, {board.source_text}")
        lines.append(f"  measured: {board.conditions_text}")
        for split in board.splits.values():
            lines.append(f"  {name}:{split.name}  {split.label}, {len(split.rows)} models")
    return lines

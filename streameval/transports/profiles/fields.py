"""A server profile's TOML tables as they are read: each value taken is checked against its
kind and range, and what is left over is an unknown field, named with its file and path. Its
own module so that every reader of a profile section (``model.py``, ``ondemand.py``) uses it
without importing the others."""

from __future__ import annotations

import math
from typing import Any

from streameval.errors import BadInputError


class TomlFields:
    """A TOML table being read: each value taken is checked, leftovers are unknown fields."""

    def __init__(self, path: str, table: Any, where: str) -> None:
        if not isinstance(table, dict):
            raise BadInputError(path, f"{where or 'profile'}: must be a table")
        self.path, self.table, self.where = path, dict(table), where

    def _name(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, problem: str) -> BadInputError:
        return BadInputError(self.path, f"{self._name(key)}: {problem}")

    def take(self, key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
        if key not in self.table:
            return default
        value = self.table.pop(key)
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise self.fail(key, f"must be {kind_name(kind)}, got true/false")
        if not isinstance(value, kind):
            raise self.fail(key, f"must be {kind_name(kind)}, got {type(value).__name__}")
        return value

    def choice(self, key: str, options: tuple[str, ...], default: str) -> Any:
        value = self.take(key, str, default)
        if value not in options:
            raise self.fail(key, f"{value!r} is not one of {', '.join(options)}")
        return value

    def number(self, key: str, default: float | None, lo: float, hi: float) -> float | None:
        value = self.take(key, (int, float), default)
        if value is None:
            return None
        if not (math.isfinite(value) and lo < value <= hi):
            raise self.fail(key, f"{value} is outside ({lo:g}, {hi:g}]")
        return float(value)

    def sub(self, key: str) -> TomlFields:
        return TomlFields(self.path, self.take(key, dict, {}), self._name(key))

    def done(self) -> None:
        if self.table:
            unknown = ", ".join(sorted(self.table))
            raise BadInputError(self.path, f"{self.where or 'profile'}: unknown field {unknown}")


def kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {int: "a number", float: "a number", str: "a string", dict: "a table", list: "a list"}
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))

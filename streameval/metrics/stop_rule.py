"""The ``--stop-when`` rule of a case run, parsed into a typed rule
(docs/methods.md#anytime-valid-intervals).

Three forms, widths and margins in points of the 0–100 columns:

- ``width<=W``: stop once every column's interval is at most W wide (known to ±W/2);
- ``COLUMN:width<=W``: the same for one column; several comma-separated clauses are allowed,
  and a plain ``width<=W`` clause among them applies to every column not named;
- ``vs=DIR``: paired with the finished run in DIR over the same cases, stop once each column
  is decided ``better``, ``worse`` or ``within`` the margin (``streameval.metrics.anytime.decide``).

Whether a named column can be computed by the run is for the caller to check before anything
runs (``named_columns`` of the rule lists them); this module only reads the text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from streameval.errors import BadInputError

DEFAULT_MARGIN = 1.0
"""Points within which two runs count as equal under ``vs=DIR`` (``--margin``)."""

OPTION = "--stop-when"

_FORMS = "expected 'width<=W', 'COLUMN:width<=W[,COLUMN:width<=W...]' or 'vs=DIR'"
_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_WIDTH = re.compile(r"width\s*<=\s*(?P<width>\S+)")


@dataclass(frozen=True, slots=True)
class WidthRule:
    """Stop once the named columns (and, with ``every`` set, all others) are narrow enough.

    ``columns`` maps a column to its width W in points; ``every`` is the width for every column
    not named, or None when only the named columns count."""

    columns: tuple[tuple[str, float], ...]
    every: float | None = None

    def width_for(self, column: str) -> float | None:
        """The width ``column`` must reach, or None when the rule does not look at it."""
        for name, width in self.columns:
            if name == column:
                return width
        return self.every

    @property
    def named_columns(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)


@dataclass(frozen=True, slots=True)
class VersusRule:
    """Stop once every column is decided against the finished run in ``baseline`` (a results
    folder, as given), ``margin`` points being equal."""

    baseline: str
    margin: float = DEFAULT_MARGIN

    @property
    def named_columns(self) -> tuple[str, ...]:
        return ()


StopRule = WidthRule | VersusRule


def rule_summary(text: str, met: bool, after: int | None) -> str:
    """The rule and where it stands, as every dashboard says it (a local run's monitor, a
    remote one's scores messages): ``--stop-when 'width<=4': met after 41 cases``."""
    if not met or after is None:
        return f"{OPTION} {text!r}: open"
    return f"{OPTION} {text!r}: met after {after} case{'' if after == 1 else 's'}"


def parse_stop_when(text: str, margin: float = DEFAULT_MARGIN) -> StopRule:
    """The rule ``text`` says (``--stop-when``), with ``margin`` (``--margin``) for ``vs=``.

    Raises ``BadInputError`` with one line naming ``--stop-when`` (or ``--margin``) for text
    that is none of the three forms, a width that is not a positive number, a column named
    twice, two plain ``width<=`` clauses, or ``vs=`` without a folder.
    """
    rule = text.strip()
    if not rule:
        raise BadInputError(OPTION, f"empty rule; {_FORMS}")
    if rule.startswith("vs="):
        baseline = rule.removeprefix("vs=").strip()
        if not baseline:
            raise BadInputError(
                OPTION, "'vs=' needs the folder of a finished run, e.g. vs=results/base"
            )
        return VersusRule(baseline, _check_margin(margin))
    columns: dict[str, float] = {}
    every: float | None = None
    for clause in (part.strip() for part in rule.split(",")):
        if not clause:
            raise BadInputError(OPTION, f"{text!r} has an empty clause; {_FORMS}")
        column, colon, condition = clause.rpartition(":")
        width = _width(condition, clause, text)
        if not colon:
            if every is not None:
                raise BadInputError(OPTION, f"{text!r} has two 'width<=' clauses for every column")
            every = width
            continue
        column = column.strip()
        if not _COLUMN.fullmatch(column):
            raise BadInputError(OPTION, f"{column!r} in {text!r} is not a column name; {_FORMS}")
        if column in columns:
            raise BadInputError(OPTION, f"column {column!r} is named twice in {text!r}")
        columns[column] = width
    return WidthRule(tuple(columns.items()), every)


def _width(condition: str, clause: str, text: str) -> float:
    match = _WIDTH.fullmatch(condition.strip())
    if match is None:
        raise BadInputError(OPTION, f"{clause!r} in {text!r} is not a rule; {_FORMS}")
    try:
        width = float(match["width"])
    except ValueError:
        width = math.nan
    if not (math.isfinite(width) and width > 0):
        raise BadInputError(
            OPTION,
            f"width in {clause!r} must be a positive number of points, got {match['width']!r}",
        )
    return width


def _check_margin(margin: float) -> float:
    value = float(margin)
    if not (math.isfinite(value) and value >= 0):
        raise BadInputError("--margin", f"must be a finite number of points >= 0, got {margin}")
    return value

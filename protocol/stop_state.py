"""A case run's ``--stop-when`` rule and where it stands, as a scores message carries it
(``wire.ScoresUpdate.stop``).

The evaluator's stop rule is checked on the evaluator; a remote dashboard cannot check it (a
``vs=DIR`` rule needs the finished run in DIR). So the evaluator sends what its own dashboard
shows: the rule's text, each watched column's state (``open``, ``width met``, ``decided
better``...) and whether the rule was met, after how many cases. Older watchers ignore the
map; a malformed one reads as none (the message stays valid: the state is extra information
for the watcher's case view, as the ``case`` map is).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_STOP_TEXT = 1000
"""A rule's text, a column's name or its state on the wire, at most (longer: no stop state)."""
MAX_STOP_COLUMNS = 256
"""Most columns a stop state names (more: no stop state)."""


@dataclass(frozen=True, slots=True)
class WireStop:
    """The stop rule of a case run (``rule``: its text as given to ``--stop-when``), each
    watched column's state in the dashboard's words, and whether it was met after ``after``
    cases (``after``: None before the rule was first checked)."""

    rule: str
    states: dict[str, str] = field(default_factory=dict)
    met: bool = False
    after: int | None = None


def stop_body(stop: WireStop) -> dict[str, Any]:
    return {
        "rule": stop.rule,
        "cols": dict(stop.states),
        "met": stop.met,
        **({} if stop.after is None else {"after": stop.after}),
    }


def _text(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_STOP_TEXT


def parse_stop(value: Any) -> WireStop | None:
    """The ``stop`` map of a scores message; anything malformed is none."""
    if not isinstance(value, dict):
        return None
    rule, cols, met, after = (value.get(n) for n in ("rule", "cols", "met", "after"))
    if not _text(rule) or not isinstance(met, bool):
        return None
    if not isinstance(cols, dict) or len(cols) > MAX_STOP_COLUMNS:
        return None
    if not all(_text(k) and _text(v) for k, v in cols.items()):
        return None
    count_ok = isinstance(after, int) and not isinstance(after, bool) and after >= 0
    if after is not None and not count_ok:
        return None
    return WireStop(str(rule), {str(k): str(v) for k, v in cols.items()}, met, after)

"""Which cases run, and in what order: ``--sets``, ``--images``, ``--actions`` and a seeded order.

A selection names what it wants; what the case folder lacks is bad input, never an empty or
silently shorter run: a set it does not have, an image number past a set's last image, an
action id no selected case has, or a selection that leaves nothing.

The order is seeded so that a long run does not always meet a server's slow warm-up, or a
drift over hours, on the same cases. Each case's place comes from ``sha256(seed, set/name)``
alone rather than from a permutation of the list: a resumed run or a smaller selection keeps
the cases it shares with the full run in the same relative order, and the order does not
depend on a random generator's version. The rule and the resulting order are recorded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from streameval.cases.model import Case, CaseSet
from streameval.errors import BadInputError, did_you_mean
from streameval.protocol.suites import WORLDMARK

ORDER_RULE = "ascending sha256 of '<seed>/<set>/<case>'"
_MAX_ID = 10**6


def parse_id_list(text: str, flag: str, *, low: int, high: int | None = None) -> tuple[int, ...]:
    """Numbers and inclusive ranges, ``"0-4,7"`` → ``(0, 1, 2, 3, 4, 7)``, each in
    ``[low, high]``; ascending, each once."""
    ids: set[int] = set()
    for raw in text.split(","):
        part = raw.strip()
        first, dash, last = part.partition("-")
        bounds = [first.strip(), last.strip()] if dash else [first.strip()]
        if not all(b.isascii() and b.isdigit() and len(b) <= 7 for b in bounds):
            raise BadInputError(flag, f"{part[:30]!r} is not a number or a range like 0-4")
        start, end = int(bounds[0]), int(bounds[-1])
        if start > end:
            raise BadInputError(flag, f"range {part!r} runs backwards")
        top = _MAX_ID if high is None else high
        for value in (start, end):
            if not low <= value <= top:
                raise BadInputError(flag, f"{value} is outside {low}-{top}")
        ids.update(range(start, end + 1))
    return tuple(sorted(ids))


def _chosen_sets(case_set: CaseSet, text: str) -> tuple[str, ...]:
    """Set names from ``--sets``: a set's full name, or a view naming all its sets
    (``first_view`` for ``first_view/real`` and ``first_view/style``)."""
    known = case_set.sets
    chosen: list[str] = []
    for raw in text.split(","):
        name = raw.strip().strip("/")
        matches = [s for s in known if s == name or s.startswith(name + "/")] if name else []
        if not matches:
            raise BadInputError(
                case_set.source,
                f"--sets names {name[:60]!r}, which this case set lacks "
                f"(its sets: {', '.join(known)})" + did_you_mean(name, known),
            )
        chosen.extend(m for m in matches if m not in chosen)
    return tuple(chosen)


def _image_range(cases: Sequence[Case]) -> str:
    indices = [c.image_index for c in cases if c.image_index is not None]
    return f"images {min(indices):03d}-{max(indices):03d}" if indices else "no numbered images"


def select_cases(
    case_set: CaseSet,
    *,
    sets: str | None = None,
    images: str | None = None,
    actions: str | None = None,
) -> CaseSet:
    """The cases of ``case_set`` that the three options (their command-line text) select;
    None selects everything along that axis."""
    source = case_set.source
    cases = list(case_set.cases)
    if sets is not None:
        chosen = _chosen_sets(case_set, sets)
        cases = [c for c in cases if c.set in chosen]
    if images is not None:
        wanted = parse_id_list(images, "--images", low=0)
        if case_set.kind != "arena_inputs":
            raise BadInputError(
                source,
                "--images selects an arena_inputs folder's images by number; "
                "choose a manifest's cases with --sets and --actions",
            )
        for set_name in dict.fromkeys(c.set for c in cases):
            in_set = [c for c in cases if c.set == set_name]
            have = {c.image_index for c in in_set}
            beyond = [i for i in wanted if i not in have]
            if beyond:
                raise BadInputError(
                    source,
                    f"--images {beyond[0]} is beyond set {set_name} ({_image_range(in_set)})",
                )
        cases = [c for c in cases if c.image_index in wanted]
    if actions is not None:
        wanted_actions = parse_id_list(
            actions, "--actions", low=min(WORLDMARK), high=max(WORLDMARK)
        )
        present = {c.action for c in cases}
        for action in wanted_actions:
            if action not in present:
                raise BadInputError(
                    source, f"--actions {action}: no selected case has action {action}"
                )
        cases = [c for c in cases if c.action in wanted_actions]
    if not cases:
        raise BadInputError(source, "the selection (--sets, --images, --actions) leaves no case")
    return case_set.with_cases(cases)


def _rank(seed: int, case: Case) -> str:
    return hashlib.sha256(f"{seed}/{case.key}".encode("utf-8", "surrogatepass")).hexdigest()


def case_order(cases: Sequence[Case], seed: int | None) -> tuple[tuple[Case, ...], dict[str, Any]]:
    """The cases in the order a run takes them, and the record of that order.

    ``seed`` None keeps the listed order (sets, images, actions); an integer orders by
    ``ORDER_RULE``. The record is ``{"seed", "rule", "order"}`` with ``order`` the case keys
    (``set/name``) in run order, for the job file that a resumed run checks against.
    """
    if seed is None:
        ordered = tuple(cases)
        rule = "as listed"
    else:
        ordered = tuple(sorted(cases, key=lambda case: _rank(seed, case)))
        rule = ORDER_RULE
    return ordered, {"seed": seed, "rule": rule, "order": [case.key for case in ordered]}

"""The master table per benchmark set, as WorldMark tabulates its four sets beside the whole.

Episodes of a benchmark case carry a ``case`` record (``scores.json``; ``runs/cases.py``):
WorldMark's 500 cases are four sets (``first_view/real`` ... ``third_view/style``) that its
table reports one by one and over all of them. ``set_tables`` builds one ``MasterTable`` per
set with the same options (columns, exclusion rule, sorting) as the table over all episodes;
results that carry no case records have no sets, and ``streameval table`` shows them as
before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from streameval.leaderboard.table import MasterTable, build_table
from streameval.results.scores_file import EpisodeRecord

ALL_SETS = "all sets"


def set_tables(episodes: Iterable[EpisodeRecord], **options: Any) -> dict[str, MasterTable]:
    """``{set: table}`` over the episodes of each set, sets in name order; empty when no
    episode runs a benchmark case. ``options`` as for ``build_table`` (its ``errors`` belong
    to the table over all episodes, not repeated here)."""
    by_set: dict[str, list[EpisodeRecord]] = {}
    for record in episodes:
        if record.case_set is not None:
            by_set.setdefault(record.case_set, []).append(record)
    return {name: build_table(by_set[name], **options) for name in sorted(by_set)}

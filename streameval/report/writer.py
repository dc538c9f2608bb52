"""Writing the reports of a run: each episode's report.html, then the folder's index.html.

A report is a view of results already written, so a failing report never fails the evaluation:
it becomes a warning the caller prints (the command line) or returns (the Python API).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from streameval.report.bands import CaseRunBands
from streameval.report.episode import write_episode_report
from streameval.report.index import write_index

log = logging.getLogger(__name__)


def write_reports(episode_dirs: Iterable[Path], root: Path) -> list[str]:
    """Reports of ``episode_dirs`` and the index of ``root``; returns the warnings."""
    warnings: list[str] = []
    bands = CaseRunBands()  # a case run's intervals, computed once for all its cases
    for d in episode_dirs:
        try:
            write_episode_report(d, bands)
        except Exception as exc:  # a report is a view: it never fails the evaluation
            log.debug("report of %s failed", d, exc_info=True)
            warnings.append(f"{d}: report not written ({exc})")
    try:
        write_index(root)
    except Exception as exc:
        log.debug("index of %s failed", root, exc_info=True)
        warnings.append(f"{root}: index.html not written ({exc})")
    return warnings

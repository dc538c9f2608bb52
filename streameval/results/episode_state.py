"""Whether an episode folder holds a finished episode, and how it is cleared for a re-run.

The one owner of both answers: ``--resume`` and ``--overwrite`` of the command line and the
Python API (``runs/existing.py`` through ``layout.decide``), a Ray batch resuming
(``scale.tasks.split_finished``) and a pool member taking over a session all ask here, so an
episode skipped by one is skipped by the others. Whether it is finished is read through
``scores_file.load_episode``, the one reader of scores.json, so resume agrees with what
``streameval table``, the reports and ``index.html`` show for the same file.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from streameval.errors import BadInputError
from streameval.results.scores_file import SCORES_FILE, load_episode

REPORT_FILE = "report.html"
CACHE_DIR = "cache"
RECORDING_DIR = "recording"
# What an episode's run writes in its folder (docs/cli.md#results-directory), with the
# ``.tmp`` names an atomic write leaves when killed between writing and renaming.
_FILES = (SCORES_FILE, SCORES_FILE + ".tmp", REPORT_FILE, REPORT_FILE + ".tmp")
_DIRS = (CACHE_DIR, RECORDING_DIR)


def episode_finished(results_dir: Path) -> bool:
    """True when ``results_dir/scores.json`` is a valid scores file that says the episode
    completed.

    Rules, the same for every caller:

    - no scores.json (a run killed before its end: scores.json is written last and atomically,
      after the cache), unreadable JSON, or a file the reader refuses (``complete: "yes"``, a
      value out of the schema's range): not finished, so a resume runs it again;
    - ``"complete": false``: not finished; ``"complete": true``: finished;
    - no ``complete`` key: finished. Every writer writes the key (``scores_document``, since
      the first format), so a file without it was written by someone else to the published
      schema (``streameval/schemas/scores.schema.json``), where ``complete`` is optional; the
      reader takes it as true, as a rollout's ``meta.json`` does, and the table shows such an
      episode as complete. Resume answers as the table does.
    """
    try:
        return load_episode(results_dir / SCORES_FILE).complete
    except (BadInputError, OSError):  # a missing or unreadable file is a BadInputError too
        return False


def holds_results(results_dir: Path) -> bool:
    """True when a former run left anything of an episode there (an empty folder is not one)."""
    return any((results_dir / name).exists() for name in (SCORES_FILE, CACHE_DIR, RECORDING_DIR))


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a link loop: not provably inside, so not kept for it
        return False


def clear_episode(results_dir: Path, *, replaying: Path | None = None) -> None:
    """Remove what a former run wrote in ``results_dir`` (only our own names), so a re-run
    starts from nothing and no stale cache, report or recording survives beside new scores.

    ``replaying`` is the rollout the re-run reads (a replay job's input). When it lies in this
    folder's ``recording/`` (``streameval replay OUT/m/ep/recording --out OUT``: a live run
    scored again from what it recorded), that recording is the input and is kept; any other
    re-run records afresh (or is told not to record), so the former recording goes.
    """
    for name in _FILES:
        (results_dir / name).unlink(missing_ok=True)
    for name in _DIRS:
        folder = results_dir / name
        if not folder.is_dir():
            continue
        if name == RECORDING_DIR and replaying is not None and _inside(replaying, folder):
            continue
        shutil.rmtree(folder)

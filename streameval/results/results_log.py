"""``OUT/results.jsonl``: one line per episode, the latest run of it (JSONL).

A re-run of an episode replaces its line instead of appending a second one, so the file can
be read as "the state of every episode in this folder" (appending gave duplicate lines, and
statuses were lost to ``null``). Each line carries the episode's status and reason and every
metric's status beside its value. The file is rewritten through a temporary file and a
rename, so a crash never leaves half a line.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from streameval.core.atomic import write_text_atomic
from streameval.core.observers import EpisodeObserver, EpisodeOutcome

RESULTS_LOG = "results.jsonl"


def outcome_line(outcome: EpisodeOutcome) -> dict[str, Any]:
    """The results.jsonl entry of a finished (or stopped) episode."""
    reason = None
    if not outcome.complete:
        reason = "; ".join(e.message for e in outcome.errors) or (
            "episode incomplete (stopped before its end)"
        )
    return {
        "episode": outcome.info.episode,
        "model": outcome.info.model,
        "status": "complete" if outcome.complete else "incomplete",
        "reason": reason,
        "frames": outcome.frames,
        "results_dir": str(outcome.results_dir) if outcome.results_dir else None,
        "metrics": {
            name: {"normalized": m.normalized, "status": m.status, "reason": m.reason}
            for name, m in outcome.scores.metrics.items()
        },
    }


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The entries of ``path`` (unreadable lines are dropped; none when there is no file)."""
    if not path.is_file():
        return []
    entries: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def _key(entry: dict[str, Any]) -> tuple[Any, Any, Any]:
    # the folder too: pool sessions may share an episode name (each has its own folder)
    return entry.get("model"), entry.get("episode"), entry.get("results_dir")


def upsert_line(path: Path, entry: dict[str, Any]) -> None:
    """Write ``entry`` in place of the line of the same episode (model, episode and folder),
    else append it. Several processes may share one ``--out`` (pool evaluators): the
    read-modify-write holds an exclusive lock on ``results.jsonl.lock``, and the whole file
    is replaced atomically, so no line is lost and no reader sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with (path.parent / (path.name + ".lock")).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            entries = [e for e in read_lines(path) if _key(e) != _key(entry)]
            entries.append(entry)
            lines = "".join(json.dumps(e) + "\n" for e in entries)
            write_text_atomic(path, lines, tmp=path.with_name(f"{path.name}.{os.getpid()}.tmp"))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class ResultsLog(EpisodeObserver):
    """Keeps ``results.jsonl`` at one line per episode as episodes end."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def on_end(self, outcome: EpisodeOutcome) -> None:
        upsert_line(self.path, outcome_line(outcome))

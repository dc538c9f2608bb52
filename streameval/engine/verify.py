"""``streameval verify RUN``: is a results folder still what its run wrote?

Two checks, each naming every artifact that fails it: every file the ledger lists is hashed
again (a changed byte, a swapped recording, a removed or an added file), and every episode's
scores are computed again from its cache, in memory, by the one scoring path live runs, replays
and ``rescore`` share (``engine.scoring``), and compared with its ``scores.json`` — so an
edited cache whose ledger entry was forged too still shows, as does a ``scores.json`` edited to
a number its cache does not give. Nothing is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streameval.errors import BadInputError
from streameval.inputs.jsonfile import read_json_file
from streameval.results.ledger import (
    LEDGER_FILE,
    artifact_files,
    read_ledger,
    sha256_file,
)
from streameval.results.scores_file import SCORES_FILE


@dataclass(frozen=True, slots=True)
class Difference:
    """One artifact that is not what the run wrote: its path (relative to the run) and how."""

    artifact: str
    problem: str

    def line(self) -> str:
        return f"{self.artifact}: {self.problem}"


@dataclass
class Verification:
    """What ``verify`` found: the differences (none for an untouched run), how many files were
    hashed and episodes rescored, and notes that are no difference (an input file not on
    this machine)."""

    run: Path
    differences: list[Difference] = field(default_factory=list)
    hashed: int = 0
    rescored: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def untouched(self) -> bool:
        return not self.differences

    def to_json(self) -> dict[str, Any]:
        return {
            "run": str(self.run),
            "untouched": self.untouched,
            "hashed": self.hashed,
            "rescored": self.rescored,
            "differences": [
                {"artifact": d.artifact, "problem": d.problem} for d in self.differences
            ],
            "notes": list(self.notes),
        }


def _short(digest: object) -> str:
    return str(digest)[:12]


def _hash_problem(actual: str, expected: object) -> str:
    return f"sha256 {_short(actual)}… differs from the ledger's {_short(expected)}…"


def check_outputs(run: Path, ledger: dict[str, Any], result: Verification) -> None:
    """Every output the ledger lists, hashed again; files the ledger does not list."""
    outputs: dict[str, Any] = ledger["outputs"]
    for rel, entry in sorted(outputs.items()):
        path = run / rel
        if not path.is_file():
            result.differences.append(Difference(rel, "missing (listed in the ledger)"))
            continue
        expected = entry.get("sha256") if isinstance(entry, dict) else None
        actual = sha256_file(path)
        result.hashed += 1
        if actual != expected:
            result.differences.append(
                Difference(
                    rel, f"sha256 {_short(actual)}… differs from the ledger's {_short(expected)}…"
                )
            )
    for path in artifact_files(run):
        rel = path.relative_to(run).as_posix()
        if rel not in outputs:
            result.differences.append(Difference(rel, "not in the ledger (added after the run)"))


def check_inputs(ledger: dict[str, Any], result: Verification) -> None:
    """Input files still on this machine, hashed again; those absent are a note only (a run
    is verified on another machine than the one that ran it)."""
    inputs = ledger.get("inputs")
    files = inputs.get("files") if isinstance(inputs, dict) else None
    for label, entry in sorted((files or {}).items()):
        if not isinstance(entry, dict) or not entry.get("path") or not entry.get("sha256"):
            continue
        path = Path(entry["path"])
        if not path.is_file():
            result.notes.append(f"input {label} ({path}) is not on this machine: not re-hashed")
            continue
        actual = sha256_file(path)
        result.hashed += 1
        if actual != entry["sha256"]:
            result.differences.append(
                Difference(
                    f"input {label} ({path})",
                    _hash_problem(actual, entry["sha256"]),
                )
            )


def rescored_document(results_dir: Path) -> dict[str, Any]:
    """The ``scores.json`` document an episode's cache gives now, as JSON values (the path
    ``rescore`` takes, without writing)."""
    from streameval.engine.rescore import CACHE_DIR
    from streameval.engine.scoring import episode_document, score_episode
    from streameval.results.cache.episode import load_episode_cache

    cache = load_episode_cache(results_dir / CACHE_DIR)
    doc = episode_document(cache.meta, score_episode(cache), len(cache.frame_keys))
    parsed: dict[str, Any] = json.loads(json.dumps(doc))
    return parsed


def document_differences(stored: dict[str, Any], recomputed: dict[str, Any]) -> list[str]:
    """What differs between a stored scores document and the one its cache gives: each metric
    by name, then each other top-level field."""
    found: list[str] = []
    old = stored.get("metrics")
    old_metrics: dict[str, Any] = old if isinstance(old, dict) else {}
    new_metrics: dict[str, Any] = recomputed.get("metrics") or {}
    names = [*new_metrics, *(k for k in old_metrics if k not in new_metrics)]
    changed = [k for k in names if old_metrics.get(k) != new_metrics.get(k)]
    if changed:
        found.append("metrics " + ", ".join(changed))
    fields = [k for k in recomputed if k != "metrics" and stored.get(k) != recomputed[k]]
    if fields:
        found.append("fields " + ", ".join(fields))
    return found


def check_scores(run: Path, ledger: dict[str, Any], result: Verification) -> None:
    """Each episode the ledger names, and every other one found below the run (kept from an
    earlier run into the same folder), scored again from its cache and compared with its
    ``scores.json``."""
    from streameval.engine.rescore import find_results_dirs

    named = [str(rel) for rel in ledger.get("episodes") or []]
    try:
        found = [d.relative_to(run).as_posix() for d in find_results_dirs(run)]
    except BadInputError:
        found = []
    for rel in [*named, *(d for d in found if d not in named and d != ".")]:
        episode = run / str(rel)
        scores_rel = f"{rel}/{SCORES_FILE}"
        try:
            recomputed = rescored_document(episode)
        except Exception as exc:  # an edited cache may fail anywhere in its readers: named
            result.differences.append(
                Difference(f"{rel}/cache", f"cannot be scored again ({type(exc).__name__}: {exc})")
            )
            continue
        result.rescored += 1
        try:
            stored = read_json_file(episode / SCORES_FILE)
        except BadInputError as exc:
            result.differences.append(Difference(scores_rel, f"unreadable ({exc.problem})"))
            continue
        if not isinstance(stored, dict):
            result.differences.append(Difference(scores_rel, "not a JSON object"))
            continue
        what = document_differences(stored, recomputed)
        if what:
            result.differences.append(
                Difference(scores_rel, "differs from what its cache scores: " + "; ".join(what))
            )


def verify_run(run: Path) -> Verification:
    """Every check on the run whose results root is ``run`` (``BadInputError``: no ledger)."""
    if run.name == LEDGER_FILE:
        run = run.parent
    ledger = read_ledger(run)
    result = Verification(run)
    check_outputs(run, ledger, result)
    check_inputs(ledger, result)
    check_scores(run, ledger, result)
    return result

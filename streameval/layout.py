"""Where an episode's results go, and what happens when they are already there.

Layout: ``OUT/<model>/<episode>/`` (scores.json, cache/, report.html, recording/) with one
``OUT/results.jsonl``. The model is part of the path so that two models evaluated into the
same ``--out`` never overwrite each other (issue 13, finding 2).

An existing episode is never replaced silently: by default it is kept and reported; with
``overwrite`` its folder is cleared first (so no stale recording or report of the former run
survives beside the new scores); with ``resume`` an episode whose scores.json says it is
complete is skipped and an incomplete one is run again.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

ExistingPolicy = Literal["keep", "overwrite", "resume"]

# Anything that could leave the folder or confuse a shell becomes "_"; issue 10 owns the
# full sanitiser and may replace this function (callers only use ``episode_dir``).
_UNSAFE = re.compile(r"[^A-Za-z0-9._+\-\[\]=,@]")


def path_component(name: str) -> str:
    """``name`` as one safe folder name (no separators, never ``.``/``..`` or empty)."""
    safe = _UNSAFE.sub("_", name).strip()
    if safe in {"", ".", ".."} or safe.startswith("."):
        safe = "_" + safe.lstrip(".")
    return safe


def episode_dir(out: Path, model: str, episode: str) -> Path:
    """``OUT/<model>/<episode>/``: the one place that names an episode's results folder."""
    return out / path_component(model) / path_component(episode)


def finished(results_dir: Path) -> bool:
    """True when ``results_dir/scores.json`` exists and says the episode completed."""
    try:
        doc = json.loads((results_dir / "scores.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("complete", True) is True


def holds_results(results_dir: Path) -> bool:
    """True when a former run left anything of an episode there."""
    return any((results_dir / name).exists() for name in ("scores.json", "cache", "recording"))


@dataclass
class ExistingDecision:
    """Which episode folders to run, and why the others are left alone."""

    run: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # --resume: finished before
    kept: list[str] = field(default_factory=list)  # default: refused, not overwritten


def decide(results_dirs: list[Path], policy: ExistingPolicy) -> ExistingDecision:
    """Sort episode folders by ``policy``; messages name the folder and the way out."""
    decision = ExistingDecision()
    for d in results_dirs:
        if not holds_results(d) or policy == "overwrite":
            decision.run.append(d)
        elif policy == "resume":
            if finished(d):
                decision.skipped.append(f"{d}: finished before, skipped (--resume)")
            else:
                decision.run.append(d)
        else:
            decision.kept.append(
                f"{d}: already holds results, kept; use --overwrite to replace them "
                "or --resume to skip finished episodes"
            )
    return decision


def clear_episode_dir(results_dir: Path) -> None:
    """Remove what a former run wrote in ``results_dir`` (only our own names)."""
    for name in ("scores.json", "report.html"):
        (results_dir / name).unlink(missing_ok=True)
    for name in ("cache", "recording"):
        if (results_dir / name).is_dir():
            shutil.rmtree(results_dir / name)

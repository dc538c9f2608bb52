"""Where an episode's results go, and what happens when they are already there.

Layout: ``OUT/<model>/<episode>/`` (scores.json, cache/, report.html, recording/) with one
``OUT/results.jsonl``; a benchmark case's episode goes to ``OUT/<model>/<set>/<case>/``. The
model is part of the path so that two models evaluated into the same ``--out`` never
overwrite each other (docs/cli.md#results-directory).

An existing episode is never replaced silently: by default it is kept and reported; with
``overwrite`` its folder is cleared first (so no stale recording or report of the former run
survives beside the new scores); with ``resume`` an episode whose scores.json says it is
complete is skipped and an incomplete one is run again. Whether a folder holds a former run,
whether that run finished and how the folder is cleared are ``episode_state``'s answers.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from streameval.errors import BadInputError
from streameval.results.episode_state import episode_finished, holds_results

ExistingPolicy = Literal["keep", "overwrite", "resume"]


class CaseLike(Protocol):
    """What names a case's folder: its set (``first_view/real``) and its name (``000_006``);
    a ``cases.Case`` or the ``case`` record a recording carries."""

    @property
    def set(self) -> str: ...

    @property
    def name(self) -> str: ...


@dataclass(frozen=True, slots=True)
class CaseName:
    """A case named by its set and name alone (a recording's or a delivery's case record)."""

    set: str
    name: str


# A variant in brackets, ``name[x]``, becomes ``name-x``; anything else that could leave the
# folder or that a shell would expand or split (``[ ] * ?``, spaces, quotes, ``$``...) becomes
# "_" (after folding accents to ASCII, so a name never needs an encoding the file system may
# lack). ``ls OUT/procedural-world-clean`` then finds the folder without quoting.
_BRACKETED = re.compile(r"\[([^\[\]]*)\]")
_UNSAFE = re.compile(r"[^A-Za-z0-9._+\-=,@]")
MAX_COMPONENT = 100


def path_component(name: str) -> str:
    """``name`` as one folder name safe in a shell: no separators, control characters, lone
    surrogates, glob characters or spaces (``procedural-world[clean]`` →
    ``procedural-world-clean``), never ``.``/``..``/empty, hidden or led by ``-``, at most
    ``MAX_COMPONENT`` characters (a longer name keeps a hash of the original, so two long names
    still get two folders). Only the folder changes: scores.json, the table and the dashboard
    keep the model's own name."""
    cleaned = name.encode("utf-8", "replace").decode("utf-8")
    folded = unicodedata.normalize("NFKD", cleaned).encode("ascii", "ignore").decode("ascii")
    safe = _UNSAFE.sub("_", _BRACKETED.sub(r"-\1", folded.strip()))
    if safe in {"", ".", ".."} or safe.startswith((".", "-")):  # hidden, or read as an option
        safe = "_" + safe.lstrip(".")
    if len(safe) > MAX_COMPONENT:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        safe = f"{safe[: MAX_COMPONENT - 9]}-{digest}"
    return safe


def episode_dir(out: Path, model: str, episode: str) -> Path:
    """``OUT/<model>/<episode>/``: the one place that names an episode's results folder.

    Each name is one sanitised component; the joined path is then resolved (following links
    already on disk) and refused when it lies outside ``out`` -- a symlink planted inside
    ``--out`` is caught here, before anything is written through it.
    """
    return _inside(out, out / path_component(model) / path_component(episode))


def case_dir(out: Path, model: str, case: CaseLike) -> Path:
    """``OUT/<model>/<set>/<case>/`` (``OUT/my-model/first_view/real/000_006/``): a benchmark
    case's results folder, grouped by its set as WorldMark groups its videos. Each part of
    the set (``first_view``, ``real``) and the case name is one sanitised component, as in
    ``episode_dir``, and a path that resolves outside ``out`` is refused."""
    parts = [path_component(part) for part in case.set.split("/") if part.strip()]
    candidate = out / path_component(model)
    for part in [*parts, path_component(case.name)]:
        candidate = candidate / part
    return _inside(out, candidate)


def _inside(out: Path, candidate: Path) -> Path:
    """``candidate`` when it resolves (links on disk followed) inside ``out``."""
    try:
        inside = candidate.resolve().is_relative_to(out.resolve())
    except (OSError, RuntimeError) as exc:  # symlink loops
        raise BadInputError(candidate, f"cannot resolve ({exc})") from None
    if not inside:
        raise BadInputError(candidate, f"resolves outside the output folder {out}")
    return candidate


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
            if episode_finished(d):
                decision.skipped.append(f"{d}: finished before, skipped (--resume)")
            else:
                decision.run.append(d)
        else:
            decision.kept.append(
                f"{d}: already holds results, kept; use --overwrite to replace them "
                "or --resume to skip finished episodes"
            )
    return decision

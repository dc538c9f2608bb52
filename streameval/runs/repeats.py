"""``--repeat K``: each episode run K times, and whether its rollouts are the same video.

Repeat 1 is the run itself (``OUT/<model>/<episode>/``); repeats 2..K go to
``OUT/.repeats/r<k>/<model>/<episode>/`` — a folder no model can be named (``path_component``
never starts a name with a dot), which the master table leaves out, so a model's row counts
each episode once while every repeat keeps its own scores, cache and recording. Each repeat
opens its source afresh (a new session, a new in-process world), driven by the same key plan
from the same start; its recording is compared with the first's frame by frame
(``replay.identity``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from streameval.core.observers import EpisodeOutcome
from streameval.replay.identity import RolloutIdentity, compare_rollouts
from streameval.results.scores_file import REPEATS_DIR
from streameval.runs.builders import RecordMode, recorders
from streameval.runs.jobs import EpisodeJob

RECORDING = "recording"


def parts_under(out: Path, path: Path) -> tuple[str, ...]:
    """``path``'s parts below ``out`` (links resolved when the plain paths do not nest)."""
    try:
        return path.relative_to(out).parts
    except ValueError:
        try:
            return path.resolve().relative_to(out.resolve()).parts
        except (ValueError, OSError):
            return ()


def is_repeat(out: Path, results_dir: Path) -> bool:
    """Whether ``results_dir`` is a repeat 2..K (under ``OUT/.repeats/``)."""
    return REPEATS_DIR in parts_under(out, results_dir)


def repeat_dir(out: Path, results_dir: Path, k: int) -> Path:
    """Where repeat ``k`` (2..K) of the episode at ``results_dir`` goes."""
    return out / REPEATS_DIR / f"r{k}" / results_dir.relative_to(out)


def repeat_jobs(
    jobs: Sequence[EpisodeJob], out: Path, repeat: int, record: RecordMode
) -> list[EpisodeJob]:
    """Each job followed by its repeats 2..``repeat`` (the same source opener, its own
    results folder and recorder)."""
    expanded: list[EpisodeJob] = []
    for job in jobs:
        expanded.append(job)
        for k in range(2, repeat + 1):
            folder = repeat_dir(out, job.results_dir, k)
            expanded.append(
                EpisodeJob(
                    f"{job.name} (repeat {k})",
                    job.open_source,
                    folder,
                    recorders(folder, record),
                    task=None,
                    case=job.case,
                )
            )
    return expanded


def identities(out: Path, outcomes: Sequence[EpisodeOutcome], repeat: int) -> list[RolloutIdentity]:
    """For each first run's episode, its K recordings compared (only episodes whose K runs
    all ran; an episode stopped early is compared on what it recorded)."""
    folders = {o.results_dir for o in outcomes if o.results_dir is not None}
    found: list[RolloutIdentity] = []
    for outcome in outcomes:
        first = outcome.results_dir
        if first is None or is_repeat(out, first):
            continue
        runs = [first, *(repeat_dir(out, first, k) for k in range(2, repeat + 1))]
        if not all(r in folders for r in runs):
            continue
        name = "/".join(parts_under(out, first)) or str(first)
        found.append(compare_rollouts(name, [r / RECORDING for r in runs]))
    return found


def repeats_block(found: Sequence[RolloutIdentity], repeat: int) -> dict[str, Any]:
    """The ledger's ``repeats`` block: K, whether every episode's rollouts are identical,
    and each episode's comparison."""
    verdicts = [i.identical for i in found]
    return {
        "repeat": repeat,
        "identical": None if not found or None in verdicts else all(verdicts),
        "episodes": [i.to_json() for i in found],
    }

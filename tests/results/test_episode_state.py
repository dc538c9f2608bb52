"""One answer to "is this episode folder finished?" and one way to clear it, for every caller:
``--resume`` (``layout.decide``, ``runs.existing.apply_existing_policy``), a Ray batch resuming
(``scale.tasks.split_finished``), and the reader the table uses (``load_episode``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streameval.errors import BadInputError
from streameval.results.episode_state import clear_episode, episode_finished, holds_results
from streameval.results.layout import decide
from streameval.results.scores_file import load_episode, scores_document
from streameval.runs.existing import apply_existing_policy
from streameval.runs.jobs import EpisodeJob
from streameval.scale.tasks import ReplayTask, split_finished


def _doc(**changes: Any) -> dict[str, Any]:
    doc = scores_document(model="m", suite="worldmark", episode="e", fps=16.0, frames=8, metrics={})
    doc.update(changes)
    return doc


def _without_complete() -> str:
    doc = _doc()
    del doc["complete"]
    return json.dumps(doc)


# (scores.json text or None for no file, whether the folder's episode is finished)
CASES: dict[str, tuple[str | None, bool]] = {
    "complete true": (json.dumps(_doc(complete=True)), True),
    "complete false": (json.dumps(_doc(complete=False)), False),
    "no complete key": (_without_complete(), True),  # every writer writes it; the schema may not
    "complete not a bool": (json.dumps(_doc(complete="yes")), False),
    "unreadable JSON": ('{"format": "streameval.scores/2", "complete": tr', False),
    "not an object": ("[true]", False),
    "no scores.json": (None, False),
}


def _folder(root: Path, text: str | None) -> Path:
    d = root / "m" / "e"
    (d / "cache").mkdir(parents=True)  # a former run: decide() looks at the folder
    if text is not None:
        (d / "scores.json").write_text(text)
    return d


def _by_decide(d: Path) -> bool:
    return bool(decide([d], "resume").skipped)


def _by_ray_resume(d: Path) -> bool:
    task = ReplayTask("e", d / "rollout", d)
    to_run, finished = split_finished([task])
    assert len(to_run) + len(finished) == 1
    return finished == [task]


def _by_existing_policy(d: Path) -> bool:
    job = EpisodeJob("e", lambda: None, d)  # type: ignore[arg-type,return-value]
    to_run, skipped, kept = apply_existing_policy([job], "resume")
    assert not kept and len(to_run) + len(skipped) == 1
    return bool(skipped)


def _by_table(d: Path) -> bool:
    try:
        return load_episode(d / "scores.json").complete
    except BadInputError:
        return False


CALLERS: dict[str, Callable[[Path], bool]] = {
    "episode_finished": episode_finished,
    "layout.decide": _by_decide,
    "scale.tasks.split_finished": _by_ray_resume,
    "runs.existing.apply_existing_policy": _by_existing_policy,
    "load_episode (the table)": _by_table,
}


@pytest.mark.parametrize("case", CASES)
def test_every_caller_gives_the_same_answer(case: str, tmp_path: Path) -> None:
    text, finished = CASES[case]
    answers = {}
    for caller, ask in CALLERS.items():
        d = _folder(tmp_path / caller.replace(" ", "_"), text)
        answers[caller] = ask(d)
    assert answers == dict.fromkeys(CALLERS, finished)


def _former_run(d: Path) -> None:
    (d / "cache").mkdir(parents=True)
    (d / "cache" / "signals.npz").write_bytes(b"x")
    (d / "recording").mkdir()
    (d / "recording" / "video.mp4").write_bytes(b"x")
    for name in ("scores.json", "scores.json.tmp", "report.html", "report.html.tmp"):
        (d / name).write_text("{}")
    (d / "notes.txt").write_text("the user's own file")


def test_clear_removes_every_name_a_run_writes_and_nothing_else(tmp_path: Path) -> None:
    d = tmp_path / "m" / "e"
    _former_run(d)
    assert holds_results(d)
    clear_episode(d, replaying=tmp_path / "elsewhere" / "rollout")
    assert sorted(p.name for p in d.iterdir()) == ["notes.txt"]
    assert not holds_results(d)
    clear_episode(d)  # nothing left to clear is fine
    clear_episode(tmp_path / "never-made")


@pytest.mark.parametrize("input_", ["recording", "recording/video.mp4"])
def test_a_replay_of_the_folders_own_recording_keeps_it(tmp_path: Path, input_: str) -> None:
    """``streameval replay OUT/m/e/recording --out OUT --overwrite``: the input survives."""
    d = tmp_path / "m" / "e"
    _former_run(d)
    clear_episode(d, replaying=d / input_)
    assert sorted(p.name for p in d.iterdir()) == ["notes.txt", "recording"]
    assert (d / "recording" / "video.mp4").is_file()


def test_existing_policy_keeps_the_recording_a_replay_job_reads(tmp_path: Path) -> None:
    replay_own, live = tmp_path / "m" / "replayed", tmp_path / "m" / "live"
    _former_run(replay_own)
    _former_run(live)
    task = ReplayTask("replayed", replay_own / "recording", replay_own)
    jobs = [
        EpisodeJob("replayed", lambda: None, replay_own, task=task),  # type: ignore[arg-type,return-value]
        EpisodeJob("live", lambda: None, live),  # type: ignore[arg-type,return-value]
    ]
    to_run, _, _ = apply_existing_policy(jobs, "overwrite")
    assert to_run == jobs
    assert (replay_own / "recording" / "video.mp4").is_file()
    assert not (live / "recording").exists()
    assert not (replay_own / "scores.json").exists() and not (replay_own / "cache").exists()

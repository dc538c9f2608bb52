"""Turn command-line arguments into rollouts: ``streameval replay ROLLOUT...`` (docs/cli.md#replay).

Each argument may be:
- a rollout directory (has ``meta.json``), or an adapter directory (``actions.json``/``.npy``);
- a delivery video ``<MODEL>/<image>_<action>.mp4``;
- a model directory full of delivery videos (read in name order; a sub-directory named after a
  video's stem holds that video's sidecars, it is not an episode);
- a directory of any of these, up to two levels down (``runs/*/`` or ``deliveries/<MODEL>/*.mp4``);
- a case run's model folder (``OUT/<model>/`` with its ``cases.json``, ``runs/cases.py``): the
  recording of every case below it, ``<set>/<case>/recording/``, however deep its set.

One bad rollout never hides the others: every bad one becomes one ``BadInputError`` (one line,
naming the file) and the rest are returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from streameval.replay.adapters import is_adapter_dir, read_adapter_dir
from streameval.replay.delivery import read_delivery
from streameval.replay.layout import (
    ACTIONS,
    CASE_RUN,
    META,
    RECORDING_DIR,
    VIDEO_SUFFIXES,
    is_video_file,
    present,
)
from streameval.replay.rollout import Rollout, read_rollout_dir

from streameval.errors import BadInputError, one_line

# Arguments are expanded this many directory levels down (root/MODEL/episode).
_MAX_DEPTH = 2


def read_rollout(path: Path) -> Rollout:
    """One rollout from one path (rollout dir, adapter dir or delivery video), or BadInputError."""
    if path.is_file() and path.name in (META, ACTIONS):
        return read_rollout(path.parent)  # someone pointed at a file of the rollout
    if path.is_file():
        if path.suffix.lower() not in VIDEO_SUFFIXES:
            raise BadInputError(path, "not a video, a rollout directory or a model directory")
        return read_delivery(path)
    if present(path / META):  # even a folder named meta.json: that is what is wrong with it
        return read_rollout_dir(path)
    if is_adapter_dir(path):
        return read_adapter_dir(path)
    raise BadInputError(path, "not a rollout directory (no meta.json)")


def _is_episode_dir(path: Path) -> bool:
    return present(path / META) or is_adapter_dir(path)


def _guarded(path: Path) -> Rollout | BadInputError:
    try:
        return read_rollout(path)
    except BadInputError as exc:
        return exc
    except OSError as exc:  # permissions, a file vanishing under us: still the user's input
        return BadInputError(path, one_line(exc.strerror or str(exc)))
    except Exception as exc:  # a reader's blind spot: this input is refused, the others go on
        return BadInputError(path, f"cannot be read ({type(exc).__name__}: {one_line(str(exc))})")


def _expand(path: Path, depth: int) -> Iterator[Rollout | BadInputError]:
    """Rollouts (or errors) under ``path``; nothing for a directory that holds none."""
    if path.is_file() or _is_episode_dir(path):
        yield _guarded(path)
        return
    if present(path / CASE_RUN):
        yield from _case_recordings(path)
        return
    try:
        entries = sorted(p for p in path.iterdir() if not p.name.startswith("."))
    except OSError as exc:
        yield BadInputError(path, one_line(exc.strerror or str(exc)))
        return
    videos = [p for p in entries if is_video_file(p)]
    sidecar_dirs = {p.stem for p in videos}
    for video in videos:
        yield _guarded(video)
    if depth >= _MAX_DEPTH:
        return
    for sub in entries:
        if sub.is_dir() and sub.name not in sidecar_dirs:
            yield from _expand(sub, depth + 1)


def _case_recordings(path: Path) -> Iterator[Rollout | BadInputError]:
    """The recordings of a case run's cases (``<set>/<case>/recording/``), in path order."""
    try:
        found = sorted(p.parent for p in path.rglob(f"{RECORDING_DIR}/{META}"))
    except OSError as exc:
        yield BadInputError(path, one_line(exc.strerror or str(exc)))
        return
    for recording in found:
        yield _guarded(recording)


def open_rollouts(paths: Iterable[str | Path]) -> tuple[list[Rollout], list[BadInputError]]:
    """Expand and read every argument: (rollouts in argument then name order, errors).

    A path that does not exist, or a directory with no rollout anywhere below it, is an error;
    the same rollout named twice is read once.
    """
    rollouts: list[Rollout] = []
    errors: list[BadInputError] = []
    seen: set[Path] = set()
    for arg in paths:
        path = Path(arg)
        try:
            exists = path.exists()
        except OSError as exc:  # a name too long for the file system
            errors.append(BadInputError(path, one_line(exc.strerror or str(exc))))
            continue
        if not exists:
            errors.append(BadInputError(path, "no such file or directory"))
            continue
        found = False
        for item in _expand(path, 0):
            found = True
            if isinstance(item, BadInputError):
                errors.append(item)
                continue
            key = item.path.resolve()
            if key not in seen:
                seen.add(key)
                rollouts.append(item)
        if not found:
            errors.append(
                BadInputError(
                    path,
                    "no rollouts found (expected meta.json, <image>_<action>.mp4 deliveries, "
                    "or directories of them)",
                )
            )
    return rollouts, errors

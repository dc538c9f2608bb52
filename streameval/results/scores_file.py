"""The results format: the one owner of ``scores.json`` (docs/cli.md#results-directory) — version,
writer, reader
and validation.

Live runs, ``rescore``, the dashboard's sample data, ``table`` and the leaderboard all go through
this module, so the format string exists once and a file written by one is read by the others.
It imports neither OpenCV, PyAV nor the pipeline (``tests/results/test_scores_file.py`` checks
``sys.modules``): ``streameval table`` must work on a machine that only holds results.

Reading is strict about structure and ranges: every problem is a ``BadInputError`` naming the
file (one line for the user, the other files still read). The bounds and the published JSON
Schema come from the input layer (``streameval.inputs``, docs/cli.md#bad-input); an official
entry whose ``normalized`` is null is read as ``missing`` (WorldAtlas, docs/methods.md#statuses)
rather than rejecting the file.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streameval.core.atomic import write_json_atomic
from streameval.core.metric_result import MetricResult
from streameval.errors import BadInputError
from streameval.inputs.jsonfile import parse_json_text, read_text_bounded
from streameval.inputs.schema import SCORES_SCHEMA, validate

SCORES_FORMAT = "streameval.scores/2"
SCORES_FILE = "scores.json"
# Version 1 stored WorldAtlas's metrics ×100 (gate 100.0); version 2 keeps them on WorldAtlas's
# own [0, 1] (docs/methods.md#worldatlas-scale). A version-1 file is read onto the new scale.
SCORES_FORMAT_V1 = "streameval.scores/1"
READABLE_FORMATS = (SCORES_FORMAT_V1, SCORES_FORMAT)
V1_WORLDATLAS_METRICS = frozenset(
    ("memory_return_gate", "keystroke_natet", "keystroke_nater", "memory_scene_f1")
)

_STATUSES = ("official", "not_applicable", "missing")


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def scores_document(
    *,
    model: str,
    suite: str,
    episode: str,
    fps: float,
    frames: int,
    metrics: Mapping[str, MetricResult],
    complete: bool = True,
    motion_types: Sequence[Mapping[str, Any]] = (),
    interactivity: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | None = None,
    errors: Sequence[Any] = (),
    case: Mapping[str, Any] | None = None,
    conditioning: Mapping[str, Any] | None = None,
    runtime: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``scores.json`` payload (docs/cli.md#results-directory), keys in the order every writer
    uses. A benchmark case's episode adds ``case`` (``cases.Case.record()``) and
    ``conditioning`` (``sent``, ``first_frame_similarity``, ``honoured``: did the model start
    from the case image); other episodes' files are as before."""
    doc: dict[str, Any] = {
        "format": SCORES_FORMAT,
        "model": model,
        "suite": suite,
        "episode": episode,
        "fps": fps,
        "frames": frames,
        "complete": complete,
        "metrics": {name: m.to_json() for name, m in metrics.items()},
        "motion_types": [dict(m) for m in motion_types],
        "interactivity": dict(interactivity or {}),
        "provenance": dict(provenance or {}),
        "errors": list(errors),
    }
    if case is not None:
        doc["case"] = dict(case)
        doc["conditioning"] = dict(conditioning) if conditioning is not None else None
    if runtime is not None:  # a served stream's runtime truth (docs/methods.md#runtime)
        doc["runtime"] = dict(runtime)
    return doc


def write_scores(results_dir: Path, doc: Mapping[str, Any]) -> Path:
    """Write ``results_dir/scores.json`` (atomically); returns its path."""
    if doc.get("format") != SCORES_FORMAT:
        raise ValueError(f"not a {SCORES_FORMAT} document: format={doc.get('format')!r}")
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / SCORES_FILE
    write_json_atomic(path, doc)
    return path


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EpisodeRecord:
    """One episode's ``scores.json``, validated. ``path`` is the file itself."""

    path: Path
    model: str
    suite: str
    episode: str
    complete: bool
    fps: float | None
    frames: int | None
    metrics: Mapping[str, MetricResult]
    # the numeric figures of the ``interactivity`` block (wall-time session figures, registered
    # with ``kernel=None``: delivered fps, jitter, stalls, key-to-response latency)
    interactivity: Mapping[str, float] = field(default_factory=dict)
    # a benchmark case's episode: its ``case`` record (``set``, ``name``, ``image``,
    # ``action``, ...) and ``conditioning`` (``honoured``: did it start from the image)
    case: Mapping[str, Any] | None = None
    conditioning: Mapping[str, Any] | None = None
    # a served stream's ``runtime`` block (native frames, real-time verdict, responsiveness)
    runtime: Mapping[str, Any] | None = None

    @property
    def results_dir(self) -> Path:
        return self.path.parent

    @property
    def case_set(self) -> str | None:
        """The benchmark set of a case's episode (``first_view/real``), else None."""
        value = self.case.get("set") if self.case is not None else None
        return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class LoadedResults:
    """Every episode that could be read, and one error per input that could not."""

    episodes: tuple[EpisodeRecord, ...]
    errors: tuple[BadInputError, ...]


# ``--repeat K``: repeats 2..K of a run's episodes (``runs.repeats``), under ``OUT/.repeats/``:
# hidden, so no model's folder can be named so (``layout.path_component`` never starts a name
# with a dot)
REPEATS_DIR = ".repeats"


def find_scores_files(path: Path) -> list[Path]:
    """``path`` itself if it is a scores.json, else every ``scores.json`` below it, sorted.

    Raises ``BadInputError`` naming ``path`` when it does not exist or holds no scores.json, so
    a typo is reported rather than tabulated as an empty model list.
    """
    if path.is_file():
        if path.name == SCORES_FILE:
            return [path]
        raise BadInputError(path, "not a results directory or a scores.json file")
    if not path.is_dir():
        raise BadInputError(path, "no such results directory")
    # repeats of a run (``--repeat``) are kept apart: a model's row counts each episode once
    found = sorted(
        p
        for p in path.rglob(SCORES_FILE)
        if p.is_file() and REPEATS_DIR not in p.relative_to(path).parts
    )
    if not found:
        raise BadInputError(path, "no scores.json found below it")
    return found


def _is_number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _optional_number(doc: Mapping[str, Any], key: str, path: Path, where: str) -> float | None:
    value = doc.get(key)
    if value is None:
        return None
    if not _is_number(value):
        raise BadInputError(path, f"{where}{key} must be a number or null, got {value!r}")
    return float(value)


def _metric_result(name: str, entry: object, path: Path) -> MetricResult:
    """One metric entry of scores.json as a ``MetricResult``.

    An official entry without a finite ``normalized`` value becomes missing (WorldAtlas,
    docs/methods.md#statuses: failed
    or non-finite results stay missing) rather than rejecting the whole file — unless it is a
    statistic (finite ``raw`` and a ``details.unit``, e.g. the imaging statistics).
    """
    where = f"metrics.{name}."
    if not isinstance(entry, dict):
        raise BadInputError(path, f"metrics.{name} must be an object, got {type(entry).__name__}")
    status = entry.get("status")
    if status not in _STATUSES:
        raise BadInputError(path, f"{where}status must be one of {_STATUSES}, got {status!r}")
    raw = _optional_number(entry, "raw", path, where)
    normalized = _optional_number(entry, "normalized", path, where)
    reason = entry.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise BadInputError(path, f"{where}reason must be a string or null, got {reason!r}")
    details = entry.get("details") or {}
    if not isinstance(details, dict):
        raise BadInputError(path, f"{where}details must be an object, got {details!r}")
    if status == "official":
        if normalized is None and raw is not None and math.isfinite(raw) and "unit" in details:
            # a statistic in its own unit (MetricResult.statistic): no table column
            return MetricResult(raw, None, "official", None, details)
        if normalized is None or not math.isfinite(normalized):
            return MetricResult.missing("official result without a finite normalized value")
        return MetricResult(raw, normalized, "official", None, details)
    fallback = "not applicable" if status == "not_applicable" else "missing"
    return MetricResult(raw, normalized, status, reason or fallback, details)


def _v1_onto_unit(name: str, result: MetricResult) -> MetricResult:
    """A version-1 WorldAtlas result on WorldAtlas's [0, 1] (``normalized / 100``)."""
    if name not in V1_WORLDATLAS_METRICS or result.normalized is None:
        return result
    return MetricResult(
        result.raw, result.normalized / 100.0, result.status, result.reason, result.details
    )


def load_episode(path: Path) -> EpisodeRecord:
    """Read and validate one ``scores.json`` (format ``streameval.scores/2``, or ``/1`` read
    onto the new scale: its WorldAtlas ``normalized`` values divided by 100).

    Every problem is a ``BadInputError`` naming the file, so the caller can report it in one
    line and go on with the other files.
    """
    text = read_text_bounded(path)
    doc = parse_json_text(text, path)  # bounded: size, nesting, digits, finite numbers
    if not isinstance(doc, dict):
        raise BadInputError(path, f"expected a JSON object, got {type(doc).__name__}")
    if doc.get("format") not in READABLE_FORMATS:
        raise BadInputError(path, f"format must be {SCORES_FORMAT!r}, got {doc.get('format')!r}")
    # The published schema (streameval/schemas/scores.schema.json): value ranges (normalized
    # in [0, 100], every number within 1e12 so sums stay finite), types, lengths.
    _validate_once(text, doc, path)
    return episode_from_document(doc, path)


_VALID_DIGESTS: OrderedDict[bytes, None] = OrderedDict()
_VALID_LOCK = threading.Lock()
_VALID_REMEMBERED = 20_000  # ~2 MB of digests: a 500-case run's files many times over


def _validate_once(text: str, doc: Any, path: Path) -> None:
    """The schema check, once per distinct file content in this process. The check takes
    ~50 ms a file (jsonschema over every metric's details), and ``table``, the running
    intervals of ``--stop-when`` and the leaderboard read the same finished files again and
    again; the document is a pure function of its text, so a text already found valid is
    valid. An invalid text is never remembered: it fails every time."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _VALID_LOCK:
        if digest in _VALID_DIGESTS:
            _VALID_DIGESTS.move_to_end(digest)
            return
    validate(doc, SCORES_SCHEMA, path)
    with _VALID_LOCK:
        _VALID_DIGESTS[digest] = None
        while len(_VALID_DIGESTS) > _VALID_REMEMBERED:
            _VALID_DIGESTS.popitem(last=False)


def episode_from_document(doc: Mapping[str, Any], path: Path) -> EpisodeRecord:
    """The record of an already-read ``scores.json`` document, as ``load_episode`` makes it
    but without the published schema's check (60 ms a file): for a reader that must read a
    case run's folder again every few seconds (the dashboard). Its ranges are left to the
    caller; every other problem is still a ``BadInputError`` naming the file."""
    if doc.get("format") not in READABLE_FORMATS:
        raise BadInputError(path, f"format must be {SCORES_FORMAT!r}, got {doc.get('format')!r}")
    model, episode, suite = doc.get("model"), doc.get("episode"), doc.get("suite", "")
    if not isinstance(model, str) or not model:
        raise BadInputError(path, f"model must be a non-empty string, got {model!r}")
    if not isinstance(episode, str) or not episode:
        raise BadInputError(path, f"episode must be a non-empty string, got {episode!r}")
    if not isinstance(suite, str):
        raise BadInputError(path, f"suite must be a string, got {suite!r}")
    complete = doc.get("complete", True)
    if not isinstance(complete, bool):
        raise BadInputError(path, f"complete must be true or false, got {complete!r}")
    fps = _optional_number(doc, "fps", path, "")
    frames = doc.get("frames")
    if frames is not None and (not isinstance(frames, int) or isinstance(frames, bool)):
        raise BadInputError(path, f"frames must be an integer or null, got {frames!r}")
    metrics = doc.get("metrics")
    if not isinstance(metrics, dict):
        raise BadInputError(path, f"metrics must be an object, got {metrics!r}")
    results = {str(name): _metric_result(str(name), e, path) for name, e in metrics.items()}
    if doc["format"] == SCORES_FORMAT_V1:
        results = {name: _v1_onto_unit(name, m) for name, m in results.items()}
    block = doc.get("interactivity")
    figures = {
        str(k): float(v)
        for k, v in (block.items() if isinstance(block, dict) else ())
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    }
    case = doc.get("case")
    conditioning = doc.get("conditioning")
    return EpisodeRecord(
        path,
        model,
        suite,
        episode,
        complete,
        fps,
        frames,
        results,
        figures,
        case if isinstance(case, dict) else None,
        conditioning if isinstance(conditioning, dict) else None,
        runtime if isinstance(runtime := doc.get("runtime"), dict) else None,
    )


def load_results(paths: Iterable[Path]) -> LoadedResults:
    """Every episode below ``paths``; bad inputs are collected, the others still loaded.

    The same file reached twice (overlapping paths) is read once. Two files for the same
    (model, suite, episode) are a conflict: the first (in path order) is kept and the second
    reported (a benchmark case's set is part of its identity: ``000_006`` of two sets is two
    episodes) — counting an episode twice would skew the model's mean, and silently picking one
    would hide the conflict (WorldAtlas, docs/methods.md#statuses: conflicting scores are never
    silently overwritten).
    """
    episodes: list[EpisodeRecord] = []
    errors: list[BadInputError] = []
    seen_files: set[Path] = set()
    seen_keys: dict[tuple[str, str, str | None, str], Path] = {}
    for path in paths:
        try:
            files = find_scores_files(Path(path))
        except BadInputError as exc:
            errors.append(exc)
            continue
        except OSError as exc:  # a name too long, a link loop: still this input's problem
            errors.append(BadInputError(path, exc.strerror or str(exc)))
            continue
        for file in files:
            resolved = file.resolve()
            if resolved in seen_files:
                continue
            seen_files.add(resolved)
            try:
                record = load_episode(file)
            except BadInputError as exc:
                errors.append(exc)
                continue
            # a case's name repeats across sets (000_006 of first_view/real and of
            # third_view/style): its set is part of its identity
            key = (record.model, record.suite, record.case_set, record.episode)
            if key in seen_keys:
                which = f"{record.case_set}/" if record.case_set is not None else ""
                errors.append(
                    BadInputError(
                        file,
                        f"duplicate episode {which}{record.episode!r} of model {record.model!r} "
                        f"(already read from {seen_keys[key]}); not counted twice",
                    )
                )
                continue
            seen_keys[key] = file
            episodes.append(record)
    return LoadedResults(tuple(episodes), tuple(errors))

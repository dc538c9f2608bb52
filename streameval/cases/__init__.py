"""Benchmark cases: the starting image, caption and intrinsics each episode is conditioned on.

Every public world-model benchmark is a list of cases that each start from a given image.
``load_cases`` reads one from disk and checks all of it before any episode runs:

- a folder is WorldMark's published ``arena_inputs/`` layout (``cases.arena``);
- a ``.jsonl`` file is a manifest, one case a line, for any other benchmark
  (``cases.manifest``).

``cases.select`` narrows them (``--sets``, ``--images``, ``--actions``) and orders them by a
seed; ``cases.images`` reads the images and says whether a first frame started from one;
``cases.model`` holds the ``Case`` record and what ``scores.json`` keeps of it.
"""

from __future__ import annotations

from pathlib import Path

from streameval.cases.arena import index_arena
from streameval.cases.images import (
    HONOURED_SIMILARITY,
    attach_image_facts,
    first_frame_similarity,
    load_image,
)
from streameval.cases.manifest import index_manifest
from streameval.cases.model import Case, CaseSet
from streameval.cases.select import case_order, select_cases
from streameval.errors import BadInputError
from streameval.inputs.paths import present

MANIFEST_SUFFIX = ".jsonl"


def index_cases(path: Path | str) -> CaseSet:
    """The cases at ``path`` with every text, intrinsics and manifest line checked, before
    their images are read."""
    path = Path(path)
    if path.is_dir():
        return index_arena(path)
    if path.suffix.lower() == MANIFEST_SUFFIX and path.is_file():
        return index_manifest(path)
    if not present(path):
        raise BadInputError(path, "missing: expected an arena_inputs folder or a .jsonl manifest")
    raise BadInputError(
        path, "not a case set: expected an arena_inputs folder or a .jsonl manifest"
    )


def load_cases(
    path: Path | str,
    *,
    sets: str | None = None,
    images: str | None = None,
    actions: str | None = None,
) -> CaseSet:
    """The cases at ``path`` (a folder: ``arena_inputs``; a ``.jsonl`` file: a manifest),
    narrowed by the ``--sets`` / ``--images`` / ``--actions`` text when given, with the image
    of every selected case read, decoded and fingerprinted (each file once). Every problem is
    a ``BadInputError`` line naming the file, raised here, before any episode runs."""
    case_set = index_cases(path)
    if sets is not None or images is not None or actions is not None:
        case_set = select_cases(case_set, sets=sets, images=images, actions=actions)
    return case_set.with_cases(attach_image_facts(case_set.cases))


__all__ = [
    "HONOURED_SIMILARITY",
    "Case",
    "CaseSet",
    "case_order",
    "first_frame_similarity",
    "index_cases",
    "load_cases",
    "load_image",
    "select_cases",
]

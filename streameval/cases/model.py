"""A case of a published benchmark: one starting image, its caption and intrinsics, its actions.

Every public world-model benchmark is a list of cases that each start from a given image;
WorldMark names each one as it names the video it expects (``{image:03d}_{action:03d}``) and
groups them in sets (``first_view/real``). A live run and a replay of delivered videos must
agree on those names and on what the model was given, so a case is one frozen record, read
and checked once (``cases.arena``, ``cases.manifest``), and ``Case.record()`` is what
``scores.json`` keeps of it: the names, and the sha256 of the image file and of the caption,
so that two results of the same case can be told to come from the same inputs.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from streameval.errors import BadInputError

CaseSetKind = Literal["arena_inputs", "manifest"]


def text_sha256(text: str) -> str:
    """The sha256 of ``text`` as UTF-8: the fingerprint of a caption."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def case_name(image_index: int, action: int) -> str:
    """WorldMark's video name for image ``image_index`` under action ``action``."""
    return f"{image_index:03d}_{action:03d}"


@dataclass(frozen=True, slots=True)
class Case:
    """One episode to run: where it starts (image, caption, intrinsics) and how it is driven.

    ``name`` is unique within ``set``; ``key`` (``set/name``) is unique within a case set.
    ``keys`` is the key string the episode holds in turn (``"WS"``), or None for a
    ``memory_loop`` case whose trajectory the run chooses. ``intrinsics`` are
    ``(fx, fy, cx, cy)`` in the original image's pixels, as published. The image facts
    (``image_sha256``, ``image_mime``, ``image_size`` as ``(width, height)``) are filled in
    when the image file is read and checked (``cases.images.attach_image_facts``).
    """

    name: str
    set: str
    suite: str
    image_id: str | None
    action: int | None
    keys: str | None
    image_path: Path | None
    prompt: str | None
    intrinsics: tuple[float, float, float, float] | None
    trajectory: str | tuple[str, ...] | None = None
    image_index: int | None = None
    image_sha256: str | None = None
    image_mime: str | None = None
    image_size: tuple[int, int] | None = None
    # where the case was read ("first_view/real_action.txt row 3", "cases.jsonl:7"), for messages
    origin: str = field(default="", compare=False)

    @property
    def key(self) -> str:
        """``set/name``: the case's identity within its case set (and its results folder)."""
        return f"{self.set}/{self.name}"

    @property
    def prompt_sha256(self) -> str | None:
        return None if self.prompt is None else text_sha256(self.prompt)

    def record(self) -> dict[str, Any]:
        """The ``"case"`` object of ``scores.json``: enough to put a live run and a replay of
        the same case side by side, and to see that they started from the same inputs."""
        doc: dict[str, Any] = {
            "name": self.name,
            "set": self.set,
            "image": self.image_id,
            "action": self.action,
            "keys": self.keys,
            "image_sha256": self.image_sha256,
            "prompt_sha256": self.prompt_sha256,
        }
        if self.intrinsics is not None:  # the camera the geometry uses (metrics.fits.camera)
            doc["intrinsics"] = [float(v) for v in self.intrinsics]
            if self.image_size is not None:
                doc["image_size"] = [int(self.image_size[0]), int(self.image_size[1])]
        if self.trajectory is not None:
            doc["trajectory"] = (
                self.trajectory if isinstance(self.trajectory, str) else list(self.trajectory)
            )
        return doc


@dataclass(frozen=True, slots=True)
class CaseSet:
    """The cases read from one ``arena_inputs/`` folder or one manifest, in their listed order
    (sets in order, images ascending, each image's actions as its row lists them)."""

    cases: tuple[Case, ...]
    source: Path
    kind: CaseSetKind

    def __len__(self) -> int:
        return len(self.cases)

    def __iter__(self) -> Iterator[Case]:
        return iter(self.cases)

    @property
    def sets(self) -> tuple[str, ...]:
        """The set names, in the order their first case appears."""
        return tuple(dict.fromkeys(case.set for case in self.cases))

    def in_set(self, name: str) -> tuple[Case, ...]:
        return tuple(case for case in self.cases if case.set == name)

    def by_key(self) -> dict[str, Case]:
        """``set/name`` → case (what a resumed run looks its finished cases up by)."""
        return {case.key: case for case in self.cases}

    def with_cases(self, cases: tuple[Case, ...] | list[Case]) -> CaseSet:
        """The same source and kind over other cases (a selection, an order)."""
        return replace(self, cases=tuple(cases))


def parse_intrinsics(values: Any, source: object) -> tuple[float, float, float, float]:
    """``[fx, fy, cx, cy]`` as four finite floats with positive focal lengths; anything else
    (another shape, NaN, a string, a 3x3 matrix) is one ``BadInputError`` naming ``source``."""
    if isinstance(values, np.ndarray):
        shape: tuple[int, ...] = values.shape
        items: Any = values.tolist()
    elif isinstance(values, list | tuple):
        shape, items = (len(values),), values
    else:
        raise BadInputError(source, f"intrinsics {values!r:.60} are not [fx, fy, cx, cy]")
    if shape != (4,):
        raise BadInputError(source, f"intrinsics of shape {shape}, expected (4,) [fx, fy, cx, cy]")
    numbers: list[float] = []
    for value in items:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BadInputError(source, f"intrinsics hold {value!r}, not a number")
        if not math.isfinite(float(value)):
            raise BadInputError(source, f"intrinsics hold {value!r}, not a finite number")
        numbers.append(float(value))
    fx, fy, cx, cy = numbers
    if fx <= 0 or fy <= 0:
        raise BadInputError(source, f"intrinsics focal lengths fx={fx:g}, fy={fy:g} must be > 0")
    return fx, fy, cx, cy

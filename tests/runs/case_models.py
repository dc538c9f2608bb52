"""In-process models for ``attach python:tests.runs.case_models:NAME --cases ...``.

``picture_world``: the procedural world at a small size, which starts from the case image
(``reset(image=, prompt=)``); ``ignores_image``: takes the image and starts elsewhere all the
same; ``no_image``: a ``reset()`` that takes no image. ``counted`` ignores the image too, and
leaves a line in ``STREAMEVAL_TEST_RESETS`` per case it starts; from its fourth case on, with
``STREAMEVAL_TEST_MARK`` set, it writes the mark and steps slowly, so that a signal sent after
the mark lands inside the fourth case, after three finished ones. ``half_clean`` and
``half_wrong_direction``: ``demo``'s worlds at 320×216.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from streameval.worlds.procedural_world import (
    ProceduralWorld,
    WorldConfig,
    world_config_for_defect,
)

from tests.inputs.models import Sliding


class _IgnoresImage(Sliding):
    def reset(self, image: Any = None, prompt: str | None = None) -> None:
        super().reset()


def ignores_image() -> Sliding:
    return _IgnoresImage()


def no_image() -> Sliding:
    return Sliding()  # reset(self) only


def picture_world() -> ProceduralWorld:
    return ProceduralWorld(WorldConfig(width=160, height=108))


def half_clean() -> ProceduralWorld:
    """``demo``'s world at half its size (320×216): for case runs whose tests are about the
    run, not the resolution (``attach`` with ``--model-name procedural-world[clean]``)."""
    return ProceduralWorld(world_config_for_defect("clean", width=320, height=216))


def half_wrong_direction() -> ProceduralWorld:
    """``demo --defect wrong_direction``'s world at half its size."""
    return ProceduralWorld(world_config_for_defect("wrong_direction", width=320, height=216))


MARKED_CASE = 4
"""The case ``counted`` marks and slows down: the one a signal interrupts."""


class _Counted(Sliding):
    def __init__(self) -> None:
        super().__init__()
        self.cases = 0
        self.slow = False

    def reset(self, **conditioning: Any) -> None:
        super().reset()
        self.cases += 1
        log = os.environ.get("STREAMEVAL_TEST_RESETS")
        if log:
            with Path(log).open("a") as f:
                f.write(f"{conditioning.get('prompt')}\n")
        mark = os.environ.get("STREAMEVAL_TEST_MARK")
        if mark and self.cases == MARKED_CASE:
            self.slow = True
            Path(mark).write_text(str(MARKED_CASE))

    def step(self, key: str) -> Any:
        if self.slow:
            time.sleep(0.2)
        return super().step(key)


def counted() -> Sliding:
    return _Counted()

"""``attach URL --image PATH [--prompt TEXT] [--intrinsics fx,fy,cx,cy]``: one start for every
episode of a plain attach (docs/cli.md#attach).

Image-to-video servers generate nothing until they are given an image (WorldFoundry Studio's
realtime models fail their first chunk without one). A case run gives each episode its case's
image; a plain attach gives every episode the same start, and sends it *exactly* as a case's
start: the episode is a one-off case (set ``attach``, named as the episode) whose conditioning
goes through the profile's ``[conditioning]`` (upload, inline or path) and whose first frames
are checked against the image like any case's. The image is read and checked once, before the
first connection.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from streameval.cases.conditioning import Conditioning
from streameval.cases.images import attach_image_facts
from streameval.cases.model import Case, parse_intrinsics
from streameval.errors import BadInputError

ATTACH_SET = "attach"
"""The set name of a plain attach's one-off cases (``scores.json``'s ``case.set``)."""


def parse_intrinsics_option(text: str) -> tuple[float, float, float, float]:
    """``--intrinsics fx,fy,cx,cy``: four numbers, in the image's pixels."""
    parts = [p.strip() for p in text.split(",")]
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        raise BadInputError(
            "--intrinsics", f"expected fx,fy,cx,cy (numbers), got {text!r}"
        ) from None
    return parse_intrinsics(numbers, "--intrinsics")


@dataclass(frozen=True, slots=True)
class AttachStart:
    """The start every episode of the attach is given; ``case`` holds the image facts, read
    once (``attach_start``)."""

    case: Case
    server_paths: tuple[tuple[str, str], ...] = ()

    @property
    def has_image(self) -> bool:
        return self.case.image_path is not None

    def episode_case(self, episode: str, keys: tuple[str, ...], suite: str) -> Case:
        """This episode's one-off case: the start, named as the episode."""
        return replace(self.case, name=episode, suite=suite, keys="".join(keys))

    def conditioning(self, episode: str, keys: tuple[str, ...], suite: str) -> Conditioning:
        return Conditioning(self.episode_case(episode, keys, suite), 0, self.server_paths)


def attach_start(
    image: Path | None,
    prompt: str | None,
    intrinsics: str | None,
    server_paths: tuple[tuple[str, str], ...] = (),
) -> AttachStart | None:
    """The start of ``--image/--prompt/--intrinsics`` (None when none is given). The image is
    read, decoded and fingerprinted now, so a bad file is one line before anything connects."""
    if image is None and prompt is None and intrinsics is None:
        return None
    if intrinsics is not None and image is None:
        raise BadInputError("--intrinsics", "needs --image (they are in its pixels)")
    case = Case(
        name="start",
        set=ATTACH_SET,
        suite="worldmark",
        image_id=None if image is None else image.name,
        action=None,
        keys=None,
        image_path=None if image is None else image,
        prompt=prompt,
        intrinsics=None if intrinsics is None else parse_intrinsics_option(intrinsics),
        origin="--image",
    )
    (case,) = attach_image_facts([case])
    return AttachStart(case, server_paths)

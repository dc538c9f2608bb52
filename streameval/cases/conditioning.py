"""What a model is given at the start of a case: the image, the caption, the intrinsics.

One record for every way of sending it (data, not code): an in-process model receives
``reset(image=..., prompt=..., intrinsics=...)`` by the names its ``reset`` accepts; a server
receives it through its profile's templates (``{image_base64}``, ``{image_mime}``,
``{image_path}``, ``{prompt}``, ``{intrinsics}``, ``{image_width}``, ``{image_height}``,
``{case}``, ``{seed}``), inline, as a path it reads, or uploaded first. The image bytes are read
once, when the case starts, never before (a run of 500 cases holds one image at a time).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streameval.cases.images import load_image, read_image_bytes
from streameval.cases.model import Case
from streameval.core.arrays import Image
from streameval.errors import BadInputError

PLACEHOLDERS = (
    "image_base64",
    "image_mime",
    "image_path",
    "prompt",
    "intrinsics",
    "image_width",
    "image_height",
    "case",
    "seed",
)
"""The template placeholders a case adds to a server profile's (docs/serve-formats.md)."""


def parse_server_paths(specs: list[str] | tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """``--server-path LOCAL=REMOTE`` (repeatable): how a server on another machine sees our
    files. Longest LOCAL prefix first, so a nested mapping wins over its parent."""
    pairs: list[tuple[str, str]] = []
    for spec in specs:
        local, sep, remote = spec.partition("=")
        if not sep or not local.strip() or not remote.strip():
            raise BadInputError("--server-path", f"expected LOCAL=REMOTE, got {spec!r}")
        pairs.append((str(Path(local.strip()).resolve()), remote.strip()))
    return tuple(sorted(pairs, key=lambda p: len(p[0]), reverse=True))


@dataclass(frozen=True, slots=True)
class Conditioning:
    """The start of one case, as sent to the model. ``server_paths`` maps local folders to
    the paths a remote server reads (``--server-path``)."""

    case: Case
    seed: int = 0
    server_paths: tuple[tuple[str, str], ...] = ()
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def has_image(self) -> bool:
        return self.case.image_path is not None

    def image_bytes(self) -> bytes:
        """The image file as published (read once)."""
        if self.case.image_path is None:
            raise BadInputError(self.case.key, "this case has no image")
        if "bytes" not in self._cache:
            self._cache["bytes"] = read_image_bytes(self.case.image_path)
        data: bytes = self._cache["bytes"]
        return data

    def image(self) -> Image:
        """The image decoded to RGB uint8 (read once)."""
        if self.case.image_path is None:
            raise BadInputError(self.case.key, "this case has no image")
        if "rgb" not in self._cache:
            self._cache["rgb"] = load_image(self.case.image_path)
        rgb: Image = self._cache["rgb"]
        return rgb

    def image_path(self) -> str:
        """The image's path as the server sees it: absolute, with the longest
        ``--server-path`` prefix replaced."""
        if self.case.image_path is None:
            raise BadInputError(self.case.key, "this case has no image")
        local = str(self.case.image_path.resolve())
        for prefix, remote in self.server_paths:
            if local == prefix or local.startswith(prefix.rstrip("/") + "/"):
                return remote.rstrip("/") + local[len(prefix.rstrip("/")) :]
        return local

    def values(self) -> dict[str, Any]:
        """Every placeholder's value (``PLACEHOLDERS``); an image's are present only when the
        case has one, so a template that needs an image on a case without one does not
        render (and says which placeholder)."""
        out: dict[str, Any] = {
            "prompt": self.case.prompt or "",
            "case": self.case.key,
            "seed": self.seed,
            "intrinsics": list(self.case.intrinsics) if self.case.intrinsics else None,
        }
        if self.has_image:
            data = self.image_bytes()
            width, height = self.case.image_size or self.image().shape[1::-1]
            out.update(
                image_base64=base64.b64encode(data).decode("ascii"),
                image_mime=self.case.image_mime or "image/jpeg",
                image_path=self.image_path(),
                image_width=int(width),
                image_height=int(height),
            )
        return out

    def reset_arguments(self) -> dict[str, Any]:
        """What an in-process model's ``reset`` may receive, by name (the caller keeps the
        names its ``reset`` accepts)."""
        args: dict[str, Any] = {"prompt": self.case.prompt}
        if self.has_image:
            args["image"] = self.image()
        if self.case.intrinsics is not None:
            args["intrinsics"] = self.case.intrinsics
        return args

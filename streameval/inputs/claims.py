"""A vendor's performance claim, as given: ``--claim "25 fps, 1x H100, 720p"`` or a server
profile's ``[claim]`` table, read into what it states (docs/cli.md#claims).

A claim is a rate under a configuration: the frame rate means nothing without the hardware
and the resolution it was measured on, so each part is kept apart and a part the claim leaves
out stays ``None`` (the verdict then says the configuration was not stated, never guesses it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from streameval.errors import BadInputError

OPTION = "--claim"
_FPS = re.compile(r"^(\d+(?:\.\d+)?)\s*(?:fps|frames?\s*/\s*s|frames per second)$", re.I)
_SIZE = re.compile(r"^(\d{2,5})\s*[x×]\s*(\d{2,5})$", re.I)
_HEIGHT = re.compile(r"^(\d{3,4})\s*p$", re.I)
_GPU = re.compile(
    r"^(?:(\d{1,3})\s*[x×]\s*)?((?:nvidia\s+)?[a-z][a-z0-9\- ]*\d[a-z0-9\- ]*)$", re.I
)
_NAMED_HEIGHTS = {"4k": 2160, "uhd": 2160, "fhd": 1080, "hd": 720}
_EXPECTED = "expected parts like '25 fps', '1x H100' and '720p' or '1280x720'"


@dataclass(frozen=True, slots=True)
class Claim:
    """What a claim states: a rate (``fps``), the GPUs (``gpu_count`` × ``gpu_name``) and the
    resolution (``height``, and ``width`` when given as W×H); None where it says nothing."""

    text: str
    fps: float | None = None
    gpu_count: int | None = None
    gpu_name: str | None = None
    width: int | None = None
    height: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "fps": self.fps,
            "gpu_count": self.gpu_count,
            "gpu_name": self.gpu_name,
            "width": self.width,
            "height": self.height,
        }


def parse_claim(text: str, source: object = OPTION) -> Claim:
    """``"25 fps, 1x H100, 720p"`` → ``Claim``; parts are comma- or semicolon-separated, in
    any order, each at most once. Anything else is ``BadInputError`` naming ``source``."""
    parts = [p.strip() for p in re.split(r"[,;]", text) if p.strip()]
    if not parts:
        raise BadInputError(source, f"empty claim: {_EXPECTED}")
    found: dict[str, Any] = {}

    def put(key: str, part: str, **values: Any) -> None:
        if key in found:
            raise BadInputError(source, f"{part!r}: the claim states its {key} twice")
        found[key] = values

    for part in parts:
        if m := _FPS.match(part):
            fps = float(m.group(1))
            if not 0 < fps <= 1000:
                raise BadInputError(source, f"{part!r}: a frame rate is in (0, 1000]")
            put("fps", part, fps=fps)
        elif m := _SIZE.match(part):
            put("resolution", part, width=int(m.group(1)), height=int(m.group(2)))
        elif m := _HEIGHT.match(part):
            put("resolution", part, height=int(m.group(1)))
        elif part.lower() in _NAMED_HEIGHTS:
            put("resolution", part, height=_NAMED_HEIGHTS[part.lower()])
        elif m := _GPU.match(part):
            count = int(m.group(1)) if m.group(1) else 1
            if count < 1:
                raise BadInputError(source, f"{part!r}: a GPU count is at least 1")
            put("gpu", part, gpu_count=count, gpu_name=" ".join(m.group(2).split()))
        else:
            raise BadInputError(source, f"cannot read {part!r}: {_EXPECTED}")
    values: dict[str, Any] = {}
    for v in found.values():
        values |= v
    return Claim(text=text.strip(), **values)

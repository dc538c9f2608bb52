"""A benchmark case's start as our protocol's ``reset`` carries it (``wire.Reset.start``).

The image file's bytes as published (msgpack ``bin``, like a frame: a base64 string would
exceed the wire's string bound), its type, the caption and ``[fx, fy, cx, cy]`` intrinsics.
An evaluator sends them only to a server whose ``hello`` lists what it takes
(``wire.Hello.start``), so an older server never receives an image it would drop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

START_NAMES = ("image", "prompt", "intrinsics")
"""What a case start may carry, in the names a model's ``reset`` takes them by."""
MAX_START_TEXT = 1 << 16
"""Of a case start's caption, at most this many characters (every string's bound on the wire)."""


@dataclass(frozen=True, slots=True, eq=False)
class CaseStart:
    """A benchmark case's start, carried by ``reset``: the image file's bytes as published
    (``image``, of type ``mime``), the caption and ``[fx, fy, cx, cy]`` intrinsics. Sent only
    to a server whose ``hello`` lists what it takes (``Hello.start``): an older server, which
    does not, would ignore the fields and run the case from wherever its model starts."""

    image: bytes | None = None
    mime: str | None = None
    prompt: str | None = None
    intrinsics: tuple[float, ...] | None = None
    case: str = ""


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def start_body(start: CaseStart) -> dict[str, Any]:
    body: dict[str, Any] = {"case": start.case}
    if start.image is not None:
        body["img"] = start.image  # binary, as frames: a string would pass no size check
        body["mime"] = start.mime or "image/jpeg"
    if start.prompt is not None:
        body["prompt"] = start.prompt
    if start.intrinsics is not None:
        body["K"] = [float(v) for v in start.intrinsics]
    return body


def parse_start(value: Any, max_case: int) -> CaseStart | None:
    """The ``start`` of a reset: checked field by field (the image's bytes are decoded by
    the server, which answers one it cannot read with a ``bye`` naming the episode);
    ``ValueError`` says what is wrong. ``max_case``: the case name's length kept."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError("'start' must be a map")
    image, mime, prompt, k = (value.get(n) for n in ("img", "mime", "prompt", "K"))
    if image is not None and (not isinstance(image, bytes) or not image):
        raise ValueError("start 'img' must be non-empty bytes")
    if mime is not None and (not isinstance(mime, str) or len(mime) > 100):
        raise ValueError("start 'mime' must be a short string")
    if prompt is not None and (not isinstance(prompt, str) or len(prompt) > MAX_START_TEXT):
        raise ValueError(f"start 'prompt' must be text of ≤ {MAX_START_TEXT:,} chars")
    intrinsics: tuple[float, ...] | None = None
    if k is not None:
        numbers = [v for v in k if _finite(v)] if isinstance(k, list) else []
        if not isinstance(k, list) or len(k) != 4 or len(numbers) != 4:
            raise ValueError("start 'K' must be [fx, fy, cx, cy], finite")
        intrinsics = tuple(float(v) for v in numbers if v is not None)
    case = value.get("case", "")
    return CaseStart(
        image=image,
        mime=mime,
        prompt=prompt,
        intrinsics=intrinsics,
        case=str(case)[:max_case] if isinstance(case, str) else "",
    )

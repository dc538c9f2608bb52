"""A mouse motion written as a key name: ``mouse:DX,DY`` (per frame, in the server's units).

A profile turns L/R into mouse motion with ``[keys.mouse]``; ``streameval probe`` has to press
such a motion like any other candidate name (``--try mouse:-8,0``), measure what it does, and
write it back as ``[keys.mouse]``. One spelling serves both: the key channel and the browser
transport read a name of this form as that motion and no button, wherever a key's name goes.
"""

from __future__ import annotations

import math
import re

PREFIX = "mouse:"
_NAME = re.compile(r"^mouse:([-+]?[0-9]*\.?[0-9]+),([-+]?[0-9]*\.?[0-9]+)$")


def mouse_name(dx: float, dy: float) -> str:
    """The name of a motion of (``dx``, ``dy``) per frame: ``mouse_name(-8, 0)`` is
    ``mouse:-8,0``."""
    return f"{PREFIX}{dx:g},{dy:g}"


def parse_mouse_name(name: str | None) -> tuple[float, float] | None:
    """(dx, dy) of a ``mouse:DX,DY`` name; None for any other name (a key's), and for a motion
    that moves nothing or is not finite."""
    if not name or not name.startswith(PREFIX):
        return None
    match = _NAME.match(name)
    if match is None:
        return None
    dx, dy = float(match.group(1)), float(match.group(2))
    if not (math.isfinite(dx) and math.isfinite(dy)) or (dx == 0 and dy == 0):
        return None
    return dx, dy


def is_mouse_name(name: str | None) -> bool:
    return parse_mouse_name(name) is not None

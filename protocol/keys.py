"""The six keystrokes of the protocol and what each one should do to the optical flow.

Signs (docs/methods.md#keys): W +Srad, S −Srad, A +Sx, D −Sx, L +Sx, R −Sx. Positive Sx = content
moves right, positive Srad = expansion. Families: W/S ``fwd``, A/D ``lat``, L/R ``yaw``.
"""

from __future__ import annotations

from typing import Literal

from streameval.errors import UnknownKeyError

Family = Literal["fwd", "lat", "yaw"]
Channel = Literal["sx", "srad"]

KEYS: tuple[str, ...] = ("W", "S", "A", "D", "L", "R")
NO_KEY = "-"

FAMILY: dict[str, Family] = {"W": "fwd", "S": "fwd", "A": "lat", "D": "lat", "L": "yaw", "R": "yaw"}
OPPOSITE: dict[str, str] = {"W": "S", "S": "W", "A": "D", "D": "A", "L": "R", "R": "L"}
_CHANNEL: dict[str, Channel] = {
    "W": "srad",
    "S": "srad",
    "A": "sx",
    "D": "sx",
    "L": "sx",
    "R": "sx",
}
_SIGN: dict[str, float] = {"W": 1.0, "S": -1.0, "A": 1.0, "D": -1.0, "L": 1.0, "R": -1.0}


def parse_key(value: object) -> str:
    """Return the canonical key for ``value`` or raise UnknownKeyError naming it."""
    if isinstance(value, str):
        key = value.strip().upper()
        if key in KEYS or key == NO_KEY:
            return key
    raise UnknownKeyError(f"unknown key {value!r} (expected one of W S A D L R or '-')")


def channel_of(key: str) -> Channel:
    """Which flow signal a key drives: ``srad`` for W/S, ``sx`` for A/D/L/R."""
    return _CHANNEL[key]


def expected_sign(key: str) -> float:
    """+1 or −1: the sign of the channel when the world obeys ``key``."""
    return _SIGN[key]

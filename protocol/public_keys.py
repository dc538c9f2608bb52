"""The public style's key messages: the JSON text browser-facing servers take on their data
channel or keys URL (``{"type": "keydown", "key": "ArrowLeft"}``), and the key names they
expect (what a browser's ``KeyboardEvent.key`` says), with ``--key-map`` overrides.

Apart from ``wire`` (our own msgpack protocol) because none of our message types is involved:
the WebRTC, MJPEG and serve transports speak this text to servers that know nothing of ours.
"""

from __future__ import annotations

import json
from typing import Literal

from streameval.protocol.keys import KEYS

from streameval.errors import WireError

BROWSER_KEYS: dict[str, str] = {
    "W": "w",
    "S": "s",
    "A": "a",
    "D": "d",
    "L": "ArrowLeft",
    "R": "ArrowRight",
}
"""Default key names of public-style servers: what a browser's ``KeyboardEvent.key`` says."""


def parse_key_map(text: str | None) -> dict[str, str]:
    """``--key-map L=j,R=l`` → the browser names with those keys replaced."""
    names = dict(BROWSER_KEYS)
    if not text:
        return names
    for part in text.split(","):
        ours, sep, theirs = part.partition("=")
        ours = ours.strip().upper()
        if not sep or ours not in KEYS or not theirs.strip():
            raise WireError(f"--key-map entry {part!r}: expected KEY=NAME with KEY in W S A D L R")
        names[ours] = theirs.strip()
    return names


def public_key_message(
    kind: Literal["keydown", "keyup", "heartbeat"], key: str | None = None
) -> str:
    """The JSON text a public-style server expects on its data channel or keys URL."""
    if kind == "heartbeat":
        return json.dumps({"type": "heartbeat"})
    return json.dumps({"type": kind, "key": key})

"""Action suites the evaluator drives (docs/methods.md#suites)."""

from __future__ import annotations

import math

from streameval.errors import UnknownActionError

WORLDMARK_SUITE = "worldmark"  # the suite name in meta.json, scores.json and case manifests
# worldmark: 15 action sequences, each key held 20 s at a nominal 16 FPS.
WORLDMARK: dict[int, str] = {
    1: "W",
    2: "S",
    3: "A",
    4: "D",
    5: "R",
    6: "WS",
    7: "LR",
    8: "AD",
    9: "WR",
    10: "SL",
    11: "WSW",
    12: "LRL",
    13: "WRW",
    14: "ADA",
    15: "WRS",
}
WORLDMARK_SECONDS_PER_KEY = 20.0
# A delivery is valid when its duration is 20 s x keys within ±10 % (docs/methods.md#suites).
WORLDMARK_DURATION_TOLERANCE = 0.10


def worldmark_keys(action_id: int) -> tuple[str, ...]:
    """The keys of worldmark sequence ``action_id`` (1–15), one per segment."""
    try:
        return tuple(WORLDMARK[action_id])
    except KeyError:
        raise UnknownActionError(
            f"unknown worldmark action id {action_id} (expected 1–15)"
        ) from None


SOAK_SUITE = "soak"
"""One continuous served episode of N minutes (``attach --suite soak --minutes N``): the
stream the real-time verdict judges (docs/methods.md#runtime)."""
SOAK_KEYS = "WDSALR"
"""The keys a soak cycles through, each held ``WORLDMARK_SECONDS_PER_KEY``: every motion, and a
key switch every 20 s for the key-response quantiles."""
SOAK_MAX_MINUTES = 24 * 60.0


def soak_keys(minutes: float) -> tuple[str, ...]:
    """The keys of a ``minutes``-long soak: ``SOAK_KEYS`` cycled, one every 20 s, enough to
    cover the minutes (a partial last key is held whole)."""
    if not (0 < minutes <= SOAK_MAX_MINUTES):
        raise ValueError(f"soak minutes must be in (0, {SOAK_MAX_MINUTES:g}], got {minutes}")
    n = max(1, math.ceil(minutes * 60.0 / WORLDMARK_SECONDS_PER_KEY))
    return tuple(SOAK_KEYS[i % len(SOAK_KEYS)] for i in range(n))

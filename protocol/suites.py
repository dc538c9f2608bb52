"""Action suites the evaluator drives (docs/methods.md#suites)."""

from __future__ import annotations

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

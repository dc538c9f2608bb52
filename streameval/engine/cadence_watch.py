"""A run whose keys are too short for the server's cadence (docs/methods.md#shortest-keys).

A chunked server answers a key with its next chunk: the picture trails the keys by the first
chunk's latency (Matrix-Game 3.0: 57 frames at 17 fps, ~3.4 s). A segment's stable zone starts
3 s after its switch, so keys shorter than a few such latencies leave the scored part of each
segment still showing the key before it: the control columns then measure the run's design
(the cadence), not the model. Said once, at the first key switch of a live session, with the
key length that would not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streameval.protocol.keys import NO_KEY

CADENCE_LATENCIES = 3.0
"""Keys shorter than this many first-response latencies are said to measure the cadence."""


def first_response_s(
    key_changes: Sequence[tuple[float, str]], arrivals: Mapping[int, float]
) -> float | None:
    """Seconds from the first key sent to the first frame that arrived after it."""
    sent = [t for t, key in key_changes if key != NO_KEY]
    if not sent:
        return None
    after = [t for t in arrivals.values() if t >= sent[0]]
    return min(after) - sent[0] if after else None


def cadence_warning(
    key_changes: Sequence[tuple[float, str]],
    arrivals: Mapping[int, float],
    interactivity: Mapping[str, Any],
) -> str | None:
    """One line when ``seconds_per_key`` is under ``CADENCE_LATENCIES`` first-response
    latencies (a live session's ``interactivity`` block holds its key length)."""
    spk = interactivity.get("seconds_per_key")
    latency = first_response_s(key_changes, arrivals)
    if not isinstance(spk, int | float) or latency is None or latency <= 0:
        return None
    need = CADENCE_LATENCIES * latency
    if spk >= need:
        return None
    return (
        f"the picture answered the first key {latency:.1f} s after it (the server's first "
        f"chunk): keys of {spk:g} s are shorter than {CADENCE_LATENCIES:g} such latencies, so "
        f"the control columns will measure the cadence, not the model; keys of at least "
        f"{need:.1f} s would not"
    )

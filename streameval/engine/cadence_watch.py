"""A run whose keys are too short for the server's cadence (docs/methods.md#shortest-keys).

A chunked server answers a key with its next chunk: the picture trails the keys by the first
chunk's latency (Matrix-Game 3.0: 57 frames at 17 fps, ~3.4 s). A segment's stable zone starts
3 s after its switch, so keys shorter than a few such latencies leave the scored part of each
segment still showing the key before it: the control columns then measure the run's design
(the cadence), not the model. Said once, with the key length that would not: before the
first frame when the profile knows the server's response (``response_s``, which ``probe``
measures and writes), else at the first key switch of a live session.
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
    if not isinstance(spk, int | float) or latency is None:
        return None
    return _line(float(spk), latency, "the picture answered the first key {:.1f} s after it")


def planned_cadence_warning(interactivity: Mapping[str, Any], response_s: object) -> str | None:
    """The same line before the first frame, from the server's response that its profile
    states (``response_s``: ``probe`` measured it)."""
    spk = interactivity.get("seconds_per_key")
    if not isinstance(spk, int | float) or not isinstance(response_s, int | float):
        return None
    return _line(float(spk), float(response_s), "the profile says the picture answers a key "
                 "{:.1f} s after it")  # fmt: skip


def _line(spk: float, latency: float, what: str) -> str | None:
    if latency <= 0:
        return None
    need = CADENCE_LATENCIES * latency
    if spk >= need:
        return None
    return (
        f"{what.format(latency)} (the server's first chunk): keys of {spk:g} s are shorter "
        f"than {CADENCE_LATENCIES:g} such latencies, so the control columns will measure the "
        f"cadence, not the model; keys of at least {need:.1f} s would not"
    )

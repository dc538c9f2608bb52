"""From what each name did to the profile's ``[keys] names``: one name per protocol key, or
the reasons there is none (never a guess).

A key's name is the one candidate whose motion is the key's command (W forward, S back, A/D
strafe, L/R yaw). The profile's own names are preferred over the alternatives (a server that
also takes the arrows keeps its letters); when two names of equal standing do it (world-arcade:
``a`` and ``ArrowLeft`` both strafe left), the profile's name for that key is chosen, else the
first pressed, and the other recorded as an alias. It refuses, naming the key, when no candidate
does the command, or when the only candidates that move
that way are ambiguous (sideways but neither clearly a strafe nor a turn, or two motions at
once); and it refuses everything when the server moves with no key held.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from streameval.probe.classify import AMBIGUOUS, MOTION_OF_KEY, KeyMotion
from streameval.protocol.keys import KEYS


@dataclass(frozen=True, slots=True)
class Mapping:
    """``names``: our key → the server's name, complete only when ``problems`` is empty."""

    names: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    # our key → the other names that do the same (the server takes both; one is chosen)
    aliases: dict[str, list[str]] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.problems and set(self.names) == set(KEYS)


def moves_alone(rest: KeyMotion | None) -> str | None:
    """The refusal for a server that moves with no key held, or None."""
    if rest is None or rest.motion == "nothing":
        return None
    speed = f" at {rest.speed:.3g} {rest.unit}" if rest.speed is not None else ""
    return (
        f"the server moves with no key held ({rest.motion}{speed}): a key's effect cannot be "
        "told from its own motion, no mapping written"
    )


def choose(
    motions: Sequence[KeyMotion],
    profile_names: dict[str, str],
    rest: KeyMotion | None = None,
    *,
    owner: str = "the profile's",
) -> Mapping:
    """The mapping ``motions`` support; ``profile_names``: the profile's key → name
    (``owner`` says whose they are in a refusal: a profile's, an adapter's)."""
    alone = moves_alone(rest)
    if alone is not None:
        return Mapping(problems=[alone])
    own = set(profile_names.values())
    names: dict[str, str] = {}
    problems: list[str] = []
    aliases: dict[str, list[str]] = {}
    tried = ", ".join(m.name for m in motions) or "nothing"
    for key in KEYS:
        want = MOTION_OF_KEY[key]
        doers = [m for m in motions if m.motion == want and m.mixed is None]
        pool = [m for m in doers if m.name in own] or doers
        if len(pool) == 1:
            names[key] = pool[0].name
            continue
        if len(pool) > 1:  # one action, two names: the profile's for this key, else the first
            pick = next((m for m in pool if m.name == profile_names.get(key)), pool[0])
            names[key] = pick.name
            aliases[key] = [m.name for m in pool if m is not pick]
            continue
        unclear = [
            m
            for m in motions
            if (key in AMBIGUOUS and m.motion == AMBIGUOUS[key])
            or (m.motion == want and m.mixed is not None)
        ]
        if unclear:
            what = "; ".join(_unclear(m) for m in unclear)
            problems.append(f"{key} ({want}): motion type ambiguous: {what}")
            continue
        own_name = profile_names.get(key)
        did = next((m.motion for m in motions if m.name == own_name), None)
        hint = f"; {owner} {own_name!r} does {did}" if did else ""
        problems.append(f"{key} ({want}): no candidate does it (tried {tried}){hint}")
    return Mapping(names, problems, aliases)


def _unclear(m: KeyMotion) -> str:
    if m.mixed is not None:
        return f"{m.name} does {m.motion} and moves {m.mixed} as much"
    p = f"p_yaw {m.p_yaw:.2f}" if m.p_yaw is not None else "no motion-type fit"
    return f"{m.name} moves {m.motion.split()[-1]} but is neither clearly a strafe nor a turn ({p})"

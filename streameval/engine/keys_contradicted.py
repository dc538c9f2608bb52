"""Keys whose measured motion type contradicts their command: A/D turning, L/R strafing.

The field's servers do not agree on letters: one maps ``a``/``d`` to yaw and ``j``/``l`` to
strafe, others the opposite, and a profile copied from the wrong family makes a video that
turns when it should strafe. Direction accuracy cannot see it (a turn and a strafe to the left
move the picture the same way); the depth-free motion type can
(docs/methods.md#motion-type-fit). So each lateral and yaw segment whose fit clearly says the
other type is a warning while the episode runs (once per key), and the episode records every
such key in ``interactivity.keys_contradicted``; the run summary repeats it. The scores stay
as measured. ``streameval probe`` uses the same threshold to name a key's motion type.

Two things make a fit say the other type without the key being wrong, and neither is claimed:

- an open segment's fit: while a key is held its fit covers 25-90 % of the frames *so far*,
  i.e. the first moments after the switch, where a picture that trails the keys still shows
  the key before. Only a closed segment whose fit frames are settled is judged while the
  episode runs (``engine.provisional``).
- a fit that says the type of the previous key (R after D fitting a strafe, A after L fitting a
  turn): the picture may still show that key, which a server that trails its keys by a
  quarter of a segment does (a 2 s lag on 3 s keys types a clean turn after a strafe at
  p_yaw 0.1). A swapped key map still shows on the segments whose previous key was of the
  other family or none, and ``streameval probe`` (rests between presses) names it outright.

And the fit weighs translation against rotation in the horizontal flow, where forward motion
is translation too: so a segment is called a strafe or a turn only where its picture moves
sideways (``moved_sideways``). A chunked server's picture trails its keys by a chunk
(WorldFoundry Studio's own code with Matrix-Game 3.0's cadence: the whole R segment of a
W-then-R episode still moving forward), and its fit's ``p_yaw`` 0 is the key before's forward
motion, not a strafe.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from streameval.core.arrays import F64
from streameval.core.episode.cache import EpisodeCache
from streameval.core.episode.motion import MotionFit
from streameval.engine.keys_ignored import RESPONSE_FLOOR_PX
from streameval.engine.scoring import fit_plan
from streameval.metrics.control.episode import control_spans
from streameval.metrics.segments import equal_split_keys
from streameval.protocol.keys import FAMILY

TYPE_CERTAIN = 0.8
"""A motion type is clear when its weight (``p_yaw`` or ``p_trans``) is at least this: clean
turns and strafes sit at 0.95 and more on the procedural world (bench/motion_type.py), and a
key between the two is called ambiguous, not either."""
EVIDENCE_PX = RESPONSE_FLOOR_PX
"""A fit whose turn and parallax amplitudes together are under this (analysis pixels) says
nothing: a standing picture fits ``p_yaw`` 1 by 0 / (0 + 0 + ε), and a frozen model's strafe
must be the keys-ignored warning, not a turn."""
HINT = "check --profile / --key-map (streameval probe URL --profile P says what each key does)"


@dataclass(frozen=True, slots=True)
class Contradiction:
    key: str
    segment: int
    p_yaw: float

    @property
    def does(self) -> str:
        return (
            "turns instead of strafing"
            if FAMILY[self.key] == "lat"
            else ("strafes instead of turning")
        )

    def message(self) -> str:
        return (
            f"key {self.key} {self.does} (segment {self.segment}, p_yaw {self.p_yaw:.2f}): {HINT}"
        )

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "segment": self.segment, "p_yaw": round(self.p_yaw, 3)}


def moved_sideways(sx: F64, srad: F64, frames: Sequence[int]) -> bool:
    """Whether the picture moved sideways at ``frames`` (a segment's fit frames): the median
    horizontal flow clears ``EVIDENCE_PX`` and is at least the median radial flow. A turn and
    a strafe both move it sideways; forward or back motion moves it radially."""
    idx = [f for f in frames if 0 <= f < min(sx.size, srad.size)]
    if not idx:
        return False
    with np.errstate(all="ignore"):
        x = np.abs(sx[idx])
        r = np.abs(srad[idx])
    if not np.isfinite(x).any():
        return False
    side, radial = float(np.nanmedian(x)), float(np.nanmedian(r)) if np.isfinite(r).any() else 0.0
    return side >= EVIDENCE_PX and side >= radial


def contradiction(
    key: str,
    segment: int,
    p_yaw: float,
    amplitude: float,
    previous: str | None = None,
    sideways: bool = True,
) -> Contradiction | None:
    """The contradiction of a segment held on ``key`` whose fit gave ``p_yaw`` from turn and
    parallax amplitudes summing to ``amplitude``, or None; ``previous`` is the key held before
    it (a fit of the previous key's type is not claimed), and a segment whose picture did not
    move sideways (``sideways`` False: ``moved_sideways``) is never one (module docstring)."""
    family = FAMILY.get(key)
    if not amplitude >= EVIDENCE_PX or not sideways:
        return None
    before = FAMILY.get(previous) if previous is not None else None
    if before in ("lat", "yaw") and before != family:
        return None  # the fit may be the previous key's motion, still on the picture
    if family == "lat" and p_yaw >= TYPE_CERTAIN:
        return Contradiction(key, segment, p_yaw)
    if family == "yaw" and 1.0 - p_yaw >= TYPE_CERTAIN:
        return Contradiction(key, segment, p_yaw)
    return None


def contradictions(
    keys: Mapping[int, str],
    fits: Mapping[int, MotionFit | None],
    sideways: Mapping[int, bool] | None = None,
) -> list[Contradiction]:
    """Every contradicted segment: ``keys`` segment index → key (the segment before each is
    ``j - 1``), ``fits`` its motion fit, ``sideways`` whether its picture moved sideways (all
    of them when None)."""
    out = []
    for j, fit in sorted(fits.items()):
        if fit is None or j not in keys:
            continue
        side = True if sideways is None else sideways.get(j, False)
        amplitude = fit.trans_amp + fit.rot_amp
        found = contradiction(keys[j], j, fit.p_yaw, amplitude, keys.get(j - 1), side)
        if found is not None:
            out.append(found)
    return out


class KeyTypeWatch:
    """While the episode runs: warn once per key whose segment's fit contradicts it."""

    def __init__(self) -> None:
        self.warned: set[str] = set()

    def segment(
        self,
        key: str,
        segment: int,
        p_yaw: float,
        amplitude: float,
        previous: str | None = None,
        sideways: bool = True,
    ) -> str | None:
        """The warning of a closed segment's fit, once per key (None when clean)."""
        found = contradiction(key, segment, p_yaw, amplitude, previous, sideways)
        if found is None or key in self.warned:
            return None
        self.warned.add(key)
        return found.message()

    def finish(
        self,
        cache: EpisodeCache,
        motion_fits: Mapping[int, MotionFit | None],
        interactivity: dict[str, Any],
    ) -> list[str]:
        """The episode's final fits: every contradicted segment into ``interactivity``
        (only when there is one: a clean episode's file is unchanged), and the warnings of
        keys not warned of while it ran."""
        keys = {span.index: span.key for span in control_spans(cache)}
        plan = fit_plan(equal_split_keys(cache.meta), cache.frame_keys, cache.fps)
        side = {j: moved_sideways(cache.sx, cache.srad, frames) for j, frames in plan.items()}
        found = contradictions(keys, motion_fits, side)
        if found:
            interactivity["keys_contradicted"] = [c.to_json() for c in found]
        fits = {j: f for j, f in motion_fits.items() if f is not None}
        return [
            w
            for c in found
            if (w := self.segment(c.key, c.segment, c.p_yaw, _amplitude(fits[c.segment])))
        ]


def _amplitude(fit: MotionFit) -> float:
    return fit.trans_amp + fit.rot_amp


def summary_lines(episode: str, records: Iterable[Mapping[str, object]]) -> list[str]:
    """The run summary's lines for an episode's ``interactivity.keys_contradicted``."""
    by_key: dict[str, int] = {}
    for record in records:
        key = str(record.get("key"))
        by_key[key] = by_key.get(key, 0) + 1
    lines = []
    for key, n in by_key.items():
        does = (
            "turns instead of strafing"
            if FAMILY.get(key) == "lat"
            else ("strafes instead of turning")
        )
        lines.append(f"{episode}: key {key} {does} in {n} segment(s); {HINT}")
    return lines

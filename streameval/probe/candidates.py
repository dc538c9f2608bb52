"""The key names ``streameval probe`` presses, in order: the profile's own names first, then
the usual alternatives of the field's servers.

Servers disagree on letters (one family turns with ``j``/``l`` and strafes with ``a``/``d``,
another the opposite; some strafe with ``q``/``e``, pitch with ``i``/``k``, or take the arrows),
so a probe tries them all and measures what each does. A profile that sends browser keyCodes
(``{keycode}`` in its key templates) gets the same names: each is sent as its keyCode
(``w`` → 87, ``ArrowLeft`` → 37), so the list covers the keyCodes such servers read.
"""

from __future__ import annotations

from streameval.errors import BadInputError
from streameval.protocol.keys import KEYS
from streameval.transports.profiles import ServerProfile
from streameval.transports.profiles.templates import placeholders_in

LETTERS = ("w", "s", "a", "d")
ARROWS = ("ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight")
ALTERNATIVES = (*LETTERS, *ARROWS, "j", "l", "q", "e", "i", "k")
"""The usual names beyond a profile's own, in the order they are tried."""
KEY_TEMPLATES = ("keydown", "keyup", "press")


def uses_keycodes(profile: ServerProfile) -> bool:
    """Whether the profile's key messages carry browser keyCodes rather than names."""
    return any(
        "keycode" in placeholders_in(profile.templates[t])
        for t in KEY_TEMPLATES
        if t in profile.templates
    )


def check_probeable(profile: ServerProfile) -> None:
    """Probe presses named keys on a streaming server: a profile that sends camera poses or
    asks for one segment at a time has no key names to find."""
    if profile.keys.semantics == "pose":
        raise BadInputError(
            profile.path,
            f"profile {profile.name!r} sends camera poses, not key names: nothing to probe",
        )
    if any(t in ("http", "exec") for t in profile.transport):
        raise BadInputError(
            profile.path,
            f"profile {profile.name!r} generates on request ({profile.transport[0]}): probe "
            "presses keys on a streaming server (ws, webrtc, mjpeg)",
        )


def profile_names(profile: ServerProfile) -> tuple[str, ...]:
    """The profile's names for W S A D L R, in that order, without repeats."""
    names = profile.key_names()
    return tuple(dict.fromkeys(names[k] for k in KEYS))


def candidates(profile: ServerProfile, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Every name to press: the profile's, then ``extra`` (``--try``), then the usual
    alternatives; each once. With keyCodes, names without one are left out."""
    names = (*profile_names(profile), *extra, *ALTERNATIVES)
    out = tuple(dict.fromkeys(names))
    if uses_keycodes(profile):
        from streameval.transports.profiles.templates import keycode_of

        out = tuple(n for n in out if keycode_of(n) is not None)
    return out

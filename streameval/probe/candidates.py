"""The key names ``streameval probe`` presses, in order: the profile's own names first, then
the usual alternatives of the field's servers.

Servers disagree on letters (one family turns with ``j``/``l`` and strafes with ``a``/``d``,
another the opposite; some strafe with ``q``/``e``, pitch with ``i``/``k``, or take the arrows),
so a probe tries them all and measures what each does. A profile that sends browser keyCodes
(``{keycode}`` in its key templates) gets the same names: each is sent as its keyCode
(``w`` → 87, ``ArrowLeft`` → 37), so the list covers the keyCodes such servers read.

A server that can be sent mouse motion (a web page; a profile whose messages carry
``{mouse_dx}``/``{mouse_dy}``, or that turns by ``[keys.mouse]`` already) may turn only by the
mouse (Matrix-Game 2, Overworld): then the mouse moved left and right by the profile's step
(``--mouse-step``, default 8 a frame) are candidates too, named ``mouse:-8,0`` and
``mouse:8,0`` (``profiles/mouse_names.py``), tried last and written as ``[keys.mouse]``. Which
sign turns which way is measured, not assumed: some servers invert the mouse.
"""

from __future__ import annotations

from streameval.errors import BadInputError
from streameval.protocol.keys import KEYS
from streameval.transports.profiles import ServerProfile
from streameval.transports.profiles.mouse_names import is_mouse_name, mouse_name
from streameval.transports.profiles.templates import placeholders_in

LETTERS = ("w", "s", "a", "d")
ARROWS = ("ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight")
ALTERNATIVES = (*LETTERS, *ARROWS, "j", "l", "q", "e", "i", "k")
"""The usual names beyond a profile's own, in the order they are tried."""
KEY_TEMPLATES = ("keydown", "keyup", "press")
MOUSE_TEMPLATES = ("keydown", "keyup", "press", "control")
MOUSE_PLACEHOLDERS = frozenset({"mouse_dx", "mouse_dy"})
DEFAULT_MOUSE_STEP = 8.0
"""The mouse motion per frame tried when the profile states none: Overworld's public client
sends pointer-lock counts of this order a frame."""


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


def takes_mouse(profile: ServerProfile) -> bool:
    """Whether mouse motion can reach the server: a web page (real mouse events), a profile
    that already turns by ``[keys.mouse]``, or one whose key messages carry the motion."""
    if "browser" in profile.transport or profile.keys.mouse:
        return True
    return any(
        placeholders_in(profile.templates[t]) & MOUSE_PLACEHOLDERS
        for t in MOUSE_TEMPLATES
        if t in profile.templates
    )


def own_names(profile: ServerProfile) -> dict[str, str]:
    """The profile's name of every protocol key, a key that is only a mouse motion
    (``[keys.mouse]`` without a button) as its ``mouse:DX,DY`` name."""
    names = profile.key_names()
    for key, (dx, dy) in profile.keys.mouse.items():
        if key not in profile.keys.named:
            names[key] = mouse_name(dx, dy)
    return names


def profile_names(profile: ServerProfile) -> tuple[str, ...]:
    """The profile's names for W S A D L R, in that order, without repeats."""
    names = own_names(profile)
    return tuple(dict.fromkeys(names[k] for k in KEYS))


def mouse_step(profile: ServerProfile, step: float | None = None) -> float:
    """The mouse motion per frame to try: ``step`` (``--mouse-step``), else the largest the
    profile states, else ``DEFAULT_MOUSE_STEP``."""
    if step is not None:
        return float(step)
    stated = [max(abs(dx), abs(dy)) for dx, dy in profile.keys.mouse.values()]
    return max(stated, default=DEFAULT_MOUSE_STEP)


def candidates(
    profile: ServerProfile, extra: tuple[str, ...] = (), step: float | None = None
) -> tuple[str, ...]:
    """Every name to press: the profile's, then ``extra`` (``--try``), then the usual
    alternatives, then (where the server can be sent it) the mouse moved left and right;
    each once. With keyCodes, names without one are left out (a mouse motion stays)."""
    mouse: tuple[str, ...] = ()
    if takes_mouse(profile):
        size = mouse_step(profile, step)
        mouse = (mouse_name(-size, 0.0), mouse_name(size, 0.0))
    names = (*profile_names(profile), *extra, *ALTERNATIVES, *mouse)
    out = tuple(dict.fromkeys(names))
    if uses_keycodes(profile):
        from streameval.transports.profiles.templates import keycode_of

        out = tuple(n for n in out if keycode_of(n) is not None or is_mouse_name(n))
    return out

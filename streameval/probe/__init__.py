"""``streameval probe``: what each key name really does on an unknown server, measured.

Servers of the field disagree on what a letter means, announce an fps they do not deliver,
send a longer first chunk and ease their motion in and out; a profile copied from a sibling
server makes a video that turns when it should strafe, and every numeric test still passes.
The probe measures instead of reading code (docs/bring-up-a-new-server.md):

- ``candidates``: the names to press, the profile's first (a mouse motion too, where the
  server can be sent one);
- ``session``: one live session through the profile's own transport (a web page in Chromium
  too: ``browser+``, ``--page``), each name pressed from rest, the frames cut into windows;
- ``steps``: the same for a model driven frame by frame (``python:M:F``, in process or through
  the bridge, ``--python``), whose keys are W S A D L R themselves: checked, not mapped;
- ``measure``: each window's flow signals and depth-free motion-type fit, as the scoring
  computes them;
- ``classify``: the window's motion (forward … pitch, nothing), speed, response and ease times;
- ``mapping``: W S A D L R → names, or the reasons there is no mapping;
- ``write``: the profile file; ``report``: the table and the JSON object.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streameval.constants import DEFAULT_FPS
from streameval.errors import BadInputError
from streameval.probe.candidates import candidates, check_probeable, own_names, profile_names
from streameval.probe.classify import MOTION_OF_KEY, KeyMotion, classify
from streameval.probe.mapping import Mapping, choose, moves_alone
from streameval.probe.measure import PressSignals
from streameval.probe.report import ProbeReport, announced_fps, delivered_fps, server_facts
from streameval.probe.session import REST_NAME, run_probe
from streameval.transports.profiles import load_profile

if TYPE_CHECKING:
    from streameval.cases.conditioning import Conditioning

__all__ = ["ProbeOptions", "ProbeReport", "SteppedModel", "probe", "probe_adapter", "probe_profile"]


@dataclass(frozen=True, slots=True)
class ProbeOptions:
    """How long each name is held and rested, and what else to try (CLI: ``probe``)."""

    press_s: float = 3.0
    rest_s: float = 2.0
    every: bool = False  # press the alternatives even when the profile's names suffice
    extra: tuple[str, ...] = ()
    image: Path | None = None
    prompt: str | None = None
    no_frame_timeout_s: float = 10.0
    keys_url: str | None = None
    page: str | None = None  # browser+http://HOST:PORT of the user's Chromium: the tab
    mouse_step: float | None = None  # the mouse motion a frame to try (default: the profile's)
    step_timeout_s: float = 300.0  # python:M:F: a model call's time-out (its load's too)


def probe_profile(url: str, profile_spec: str | None) -> str:
    """The profile a server is probed with: ``--profile``, else for a web page ``web-wasd``
    (as ``attach``: the page's largest canvas, WASD and the arrows); a server needs one."""
    if profile_spec is not None:
        return profile_spec
    if not url.startswith("browser+"):
        raise BadInputError(url, "give --profile (a built-in or a FILE.toml)")
    return "web-wasd"


async def probe(url: str, profile_spec: str, options: ProbeOptions) -> ProbeReport:
    """Probe the server at ``url`` that ``profile_spec`` (a built-in or a file, as
    ``probe_profile`` chose it) describes
    (``probe_adapter`` for a ``python:`` model). ``BadInputError`` for a profile that cannot
    be probed or a server that cannot be reached; a session that ends early still reports
    what it measured (``end_reason``)."""
    profile = load_profile(profile_spec)
    check_probeable(profile)
    if profile.conditioning.required and options.image is None:
        raise BadInputError(
            f"--profile {profile_spec}",
            "the server generates nothing without a start image: give --image PATH",
        )
    own = own_names(profile)
    names = candidates(profile, options.extra, options.mouse_step)
    first = len(profile_names(profile))
    conditioning = _conditioning(options)
    fps_hint = profile.fps or DEFAULT_FPS
    motions: dict[str, KeyMotion] = {}

    def enough(windows: list[PressSignals]) -> bool:
        """Stop pressing: the server moves with no key (nothing a press could show), or the
        names pressed so far map all six (unless every name is asked for)."""
        rest = next((classify(w, fps_hint) for w in windows if w.name == REST_NAME), None)
        if moves_alone(rest) is not None:
            return True
        found = [classify(w, fps_hint) for w in windows if w.name != REST_NAME]
        return not options.every and bool(found) and choose(found, own, rest).complete

    session = await run_probe(
        url,
        profile_spec,
        names,
        first_names=first,
        press_s=options.press_s,
        rest_s=options.rest_s,
        enough=enough,
        conditioning=conditioning,
        no_frame_timeout_s=options.no_frame_timeout_s,
        keys_url=options.keys_url,
        page=options.page,
    )
    presses = [w.t_down for w in session.windows]
    fps = announced_fps(session.last_messages) or delivered_fps(session.times, presses) or fps_hint
    rest: KeyMotion | None = None
    silent = any(w.name == REST_NAME and w.t.size == 0 for w in session.windows)
    for window in session.windows:
        motion = classify(window, fps, silent_at_rest=silent and window.name != REST_NAME)
        if window.name == REST_NAME:
            rest = motion
        else:
            motions[window.name] = motion
    keys = [motions[n] for n in session.pressed if n in motions]
    mapping: Mapping = choose(keys, own, rest)
    similarity, honoured = _started_from(conditioning, session.first_frame)
    facts = server_facts(session, profile.fps, similarity, honoured)
    end = None if session.complete else (session.end_reason or "the session ended early")
    if end is not None:  # what a name would have done is unknown: only the session's end
        mapping = Mapping(mapping.names, [f"the probe did not finish: {end}"])
    return ProbeReport(url, profile.name, facts, rest, keys, mapping, end, errors=session.errors)


@dataclass(frozen=True, slots=True)
class SteppedModel:
    """A ``python:M:F`` model as ``attach`` builds it (``runs.python_model``, in process or
    through the bridge): the object, its name, the fps it is driven at, its stated size, and
    where it runs (for the report)."""

    model: Any
    name: str
    fps: float
    width: int | None = None
    height: int | None = None
    where: str = "in process"


async def probe_adapter(url: str, stepped: SteppedModel, options: ProbeOptions) -> ProbeReport:
    """``python:M:F``: each of W S A D L R held from rest, frame by frame (``steps``), and
    whether each does its own command; ``reset(image=…)`` with ``--image``."""
    from streameval.probe.report import ServerFacts
    from streameval.probe.steps import run_step_probe
    from streameval.protocol.keys import KEYS

    model, name, fps = stepped.model, stepped.name, stepped.fps
    conditioning = _conditioning(options)
    if conditioning is not None:
        from streameval.transports.inprocess.driver import reset_keywords

        accepted = reset_keywords(getattr(model, "reset", None))
        if accepted is not None and "image" not in accepted:
            raise BadInputError(
                f"--image {options.image}",
                f"{name} has no reset(image=...): it cannot start from an image",
            )
    session, steps_per_s = await run_step_probe(
        model,
        model_name=name,
        fps=fps,
        names=KEYS,
        press_s=options.press_s,
        rest_s=options.rest_s,
        step_timeout=options.step_timeout_s,
        conditioning=conditioning,
        width=stepped.width,
        height=stepped.height,
    )
    rest: KeyMotion | None = None
    motions: dict[str, KeyMotion] = {}
    for window in session.windows:
        motion = classify(window, fps)
        if window.name == REST_NAME:
            rest = motion
        else:
            motions[window.name] = motion
    keys = [motions[n] for n in session.pressed if n in motions]
    own = {k: k for k in KEYS}
    mapping = choose(keys, own, rest, owner="the adapter's")
    wrong = [
        f"{k} ({MOTION_OF_KEY[k]}): the adapter's {k!r} does "
        f"{motions[k].motion if k in motions else 'nothing measured'}, its {v!r} does "
        f"{MOTION_OF_KEY[k]}: the adapter's keys are crossed"
        for k, v in mapping.names.items()
        if v != k
    ]
    mapping = Mapping(mapping.names, [*wrong, *mapping.problems], mapping.aliases)
    similarity, honoured = _started_from(conditioning, session.first_frame)
    facts = ServerFacts(
        fps_measured=steps_per_s,
        fps_announced=fps,
        fps_profile=None,
        chunk_first=None,
        chunk_later=[],
        chunk_origin=None,
        resolution=session.size,
        frames=len(session.times),
        messages={},
        case_similarity=similarity,
        case_honoured=honoured,
    )
    end = None if session.complete else (session.end_reason or "the model stopped early")
    if end is not None:
        mapping = Mapping(mapping.names, [f"the probe did not finish: {end}"])
    return ProbeReport(
        url, "", facts, rest, keys, mapping, end, errors=session.errors,
        adapter=f"{name}, {stepped.where}",
    )  # fmt: skip


def _started_from(
    conditioning: Conditioning | None, first_frame: Any
) -> tuple[float | None, bool | None]:
    """How like ``--image`` the first frame is, and whether that counts as started from it
    (None, None without an image or a frame)."""
    if conditioning is None or first_frame is None:
        return None, None
    from streameval.cases.images import first_frame_similarity, honoured

    similarity = first_frame_similarity(conditioning.image(), first_frame)
    return similarity, honoured(similarity)


def _conditioning(options: ProbeOptions) -> Conditioning | None:
    """``--image`` (and ``--prompt``) as a one-case conditioning, or None."""
    if options.image is None:
        return None
    from streameval.cases.conditioning import Conditioning
    from streameval.cases.images import attach_image_facts
    from streameval.cases.model import Case

    case = Case(
        name="probe",
        set="probe",
        suite="probe",
        image_id=None,
        action=None,
        keys=None,
        image_path=options.image,
        prompt=options.prompt,
        intrinsics=None,
        origin="--image",
    )
    return Conditioning(attach_image_facts([case])[0])

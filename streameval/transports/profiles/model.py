"""A server profile as a typed, validated object: how one family of servers talks.

Read from TOML (docs/serve-formats.md#writing-a-profile). Every field is checked here, once,
when the profile is loaded: a wrong type, an unknown field, a value out of its range or a
template that does not render is one ``BadInputError`` naming the file, the field and what is
wrong — never a surprise in the middle of an episode.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from streameval.errors import BadInputError, TemplateError
from streameval.protocol.keys import KEYS
from streameval.transports.profiles.browser import BrowserSpec, read_browser
from streameval.transports.profiles.fields import TomlFields, kind_name
from streameval.transports.profiles.lease import LeaseSpec, read_lease
from streameval.transports.profiles.mouse_names import is_mouse_name, parse_mouse_name
from streameval.transports.profiles.ondemand import (
    AnswerSpec,
    ProcessSpec,
    RequestSpec,
    describe,
    read_answer,
    read_process,
    read_request,
)
from streameval.transports.profiles.start_spec import (
    ConditioningSpec,
    check_conditioning,
    read_conditioning,
)
from streameval.transports.profiles.templates import (
    PLACEHOLDERS,
    encode,
    keycode_of,
    placeholders_in,
    render,
)

Transport = Literal["ws", "webrtc", "mjpeg", "http", "exec", "browser"]
TRANSPORTS = ("ws", "webrtc", "mjpeg", "http", "exec", "browser")
ON_DEMAND = ("http", "exec")
"""Styles that generate when asked (``ondemand.py``): no key messages, no frame stream."""
OWN_KEYS = ("browser",)
"""Transports whose keys are real input events, not messages: no key templates."""
Semantics = Literal["hold", "press", "pose", "frame"]
FrameEncoding = Literal["binary", "base64", "video-track", "multipart"]
Codec = Literal["json", "msgpack"]
KeyChannelKind = Literal["same", "keys-url", "datachannel"]

TEMPLATE_NAMES = (
    "configure",
    "reset",
    "keydown",
    "keyup",
    "press",
    "pose",
    "control",
    "heartbeat",
)
START_TEMPLATES = ("configure", "reset")
"""Templates that may be a list of messages (``[[templates.configure]]``), sent in order."""
MAX_MOUSE = 100_000.0
"""The largest mouse motion per frame a profile may state, in the server's units."""
STAT_NAMES = ("generation_ms", "control_latency_ms", "queue_depth", "dropped_frames")
MAX_PROFILE_BYTES = 256 * 1024
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
SAMPLE_VALUES: dict[str, Any] = {
    "key": "w",
    "keycode": 87,
    "timestamp": 0.0,
    "speed": 1.0,
    "chunk": 0,
    "frames": 9,
    "poses": [[[1.0, 0.0, 0.0, 0.0]] * 4],
    "intrinsics": [[1.0, 0.0, 0.0]] * 3,
    "episode": "episode",
    "mouse_dx": 0.0,
    "mouse_dy": 0.0,
    "buttons": ["w"],
    # what a case adds (``streameval.cases.conditioning``): a template is checked with these
    "image_base64": "aGVsbG8=",
    "image_mime": "image/jpeg",
    "image_path": "/data/000.jpg",
    "prompt": "First-person view.",
    "image_width": 1024,
    "image_height": 768,
    "case": "first_view/real/000_001",
    "seed": 0,
}


@dataclass(frozen=True, slots=True)
class FrameSpec:
    """How frames arrive: ``binary`` image messages, ``base64`` in a JSON field (``field``, a
    dotted path), a WebRTC ``video-track`` or a ``multipart`` MJPEG stream; ``control``: how the
    server's other messages are written (JSON text, or msgpack binary)."""

    encoding: FrameEncoding = "binary"
    field: str = "frame"
    control: Codec = "json"
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES


@dataclass(frozen=True, slots=True)
class KeySpec:
    """How keys go out. ``semantics``: ``hold`` (keydown … keyup), ``press`` (one press per
    chunk, or every ``press_every_ms``), ``pose`` (the key's camera path, one chunk of poses
    at a time), ``frame`` (one ``control`` message per frame: the held key's buttons and its
    mouse motion for that frame; Overworld). ``chunk_frames``: a chunk's length when the
    server does not say. ``mouse``: key → (dx, dy), the mouse motion that key stands for, per
    frame, in the server's units (``{mouse_dx}``, ``{mouse_dy}``): a camera turned by the
    mouse (Matrix-Game 2, Overworld) rather than by a key. A key in ``mouse`` and not in
    ``names`` is only a motion: no button (``{buttons}`` is empty)."""

    channel: KeyChannelKind = "same"
    datachannel: str = "keys"
    semantics: Semantics = "hold"
    encoding: Codec = "json"
    press_every_ms: float | None = None
    chunk_frames: int = 9
    speed: float = 1.0
    heartbeat_s: float | None = None
    names: dict[str, str] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)
    no_move: str | None = None  # {move} of a turn key (on-demand styles)
    no_turn: str | None = None  # {turn} of a move key
    mouse: dict[str, tuple[float, float]] = field(default_factory=dict)
    named: frozenset[str] = frozenset()  # the keys ``names`` gives a name (a button)

    def motion(self, key: str | None) -> tuple[float, float]:
        """The mouse motion per frame of ``key`` (0, 0 for a key without one); a probe's
        ``mouse:DX,DY`` candidate is its own motion (``mouse_names``)."""
        if not key:
            return (0.0, 0.0)
        return self.mouse.get(key) or parse_mouse_name(key) or (0.0, 0.0)

    def is_button(self, key: str | None) -> bool:
        """Whether ``key`` presses a button: every key but none, a mouse-only key and a
        ``mouse:DX,DY`` name."""
        if key is None or key == "-" or is_mouse_name(key):
            return False
        return key not in self.mouse or key in self.named


@dataclass(frozen=True, slots=True)
class PoseSpec:
    """Pose semantics: metres and degrees per second of video, and the camera model sent as
    intrinsics (pixels of a ``width`` × ``height`` image)."""

    speed_m_s: float = 1.0
    turn_deg_s: float = 30.0
    fov_deg: float = 60.0
    width: int = 640
    height: int = 360


@dataclass(frozen=True, slots=True)
class Match:
    """Which server messages a rule applies to: every ``field = value`` pair must hold."""

    fields: dict[str, str]

    def matches(self, message: Mapping[str, Any]) -> bool:
        return all(str(lookup(message, k)) == v for k, v in self.fields.items())


@dataclass(frozen=True, slots=True)
class StatsSpec:
    """Which server messages close a chunk and carry its statistics; ``fields``: our name →
    the message's field (dotted path); ``frames``: the field with the chunk's frame count."""

    match: Match
    frames: str | None = "frames"
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ReadySpec:
    """The answer to ``configure`` to wait for before the first key; ``fps``: the field
    (dotted path) where it announces the model's frame rate, which the session then runs at
    (docs/serve-formats.md#frame-rate)."""

    match: Match
    timeout_s: float = 30.0
    fps: str | None = None


@dataclass(frozen=True, slots=True)
class ServerProfile:
    name: str
    description: str
    transport: tuple[Transport, ...]
    url: str
    path: str
    fps: float | None = None
    frames: FrameSpec = FrameSpec()
    keys: KeySpec = KeySpec()
    pose: PoseSpec = PoseSpec()
    templates: dict[str, Any] = field(default_factory=dict)
    stats: StatsSpec | None = None
    ready: ReadySpec | None = None
    error: Match | None = None
    error_field: str = "message"
    request: RequestSpec | None = None
    answer: AnswerSpec | None = None
    process: ProcessSpec | None = None
    conditioning: ConditioningSpec = field(default_factory=ConditioningSpec)
    claim: str | None = None  # ``[claim]``: what the vendor states (``inputs.claims``)
    # seconds from a key to the picture answering it (a chunked server: its first chunk), as
    # ``probe`` measured it: a run whose keys are shorter than a few of these is told so before
    # it starts (docs/methods.md#shortest-keys)
    response_s: float | None = None
    lease: LeaseSpec | None = None  # ``[lease]``: the socket is claimed over HTTP first
    end: Match | None = None  # ``[end]``: a server message that ends the session
    end_field: str = "message"
    browser: BrowserSpec | None = None  # ``[browser]``: a web page's world (``browser+URL``)

    @property
    def takes_images(self) -> bool:
        return self.conditioning.image != "none"

    def key_names(self, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
        """Our key → the server's name (``--key-map`` entries replace the profile's)."""
        names = {k: self.keys.names.get(k, k.lower()) for k in KEYS}
        names.update(overrides or {})
        return names

    def keycode(self, key: str, name: str) -> int | None:
        return self.keys.codes.get(key, keycode_of(name))

    def expects(self) -> str:
        """One line for ``streameval profiles``: what the server must speak."""
        on_demand = describe(self.request, self.answer, self.process)
        if on_demand is not None:
            return on_demand
        keys = self.keys
        if "browser" in self.transport:
            spec = self.browser or BrowserSpec()
            element = spec.element or "the largest canvas or video"
            names = " ".join(self.key_names()[k] for k in ("W", "S", "A", "D", "L", "R"))
            mouse = ", turns as mouse motion" if keys.mouse else ""
            return (
                f"a web page in Chromium: frames of {element} by {spec.capture}; keys as real "
                f"key events ({names}){mouse}"
            )
        what = {
            "hold": "keydown/keyup",
            "press": "one press per chunk",
            "pose": "camera poses",
            "frame": "one control message per frame",
        }
        channel = {
            "same": "on the same socket",
            "keys-url": "to --keys-url",
            "datachannel": f"on data channel {keys.datachannel!r}",
        }[keys.channel]
        frames = {
            "binary": "binary JPEG/PNG messages",
            "base64": f"base64 JSON field {self.frames.field!r}",
            "video-track": "a video track",
            "multipart": "an MJPEG stream",
        }[self.frames.encoding]
        extra = f", heartbeat {keys.heartbeat_s:g} s" if keys.heartbeat_s else ""
        stats = ", chunk statistics" if self.stats else ""
        mouse = ", turns as mouse motion" if keys.mouse else ""
        lease = "a session claimed over HTTP (claim, heartbeat, release); " if self.lease else ""
        return (
            f"{lease}frames as {frames}; keys {what[keys.semantics]} {channel}{extra}{stats}{mouse}"
        )


def lookup(message: Mapping[str, Any], path: str) -> Any:
    """``a.b`` in a nested message, or None."""
    value: Any = message
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


# ---------------------------------------------------------------- reading


def _string_table(section: TomlFields, key: str) -> dict[str, str]:
    table = section.take(key, dict, {})
    for k, v in table.items():
        if not isinstance(v, str | int | float) or isinstance(v, bool):
            raise section.fail(f"{key}.{k}", "must be a string or a number")
    return {str(k): str(v) for k, v in table.items()}


def _match(section: TomlFields, key: str) -> Match:
    fields = _string_table(section, key)
    if not fields:
        raise section.fail(key, 'needs at least one field = value (e.g. { type = "ready" })')
    return Match(fields)


def _key_table(section: TomlFields, key: str, kind: type) -> dict[str, Any]:
    table = section.take(key, dict, {})
    out: dict[str, Any] = {}
    for ours, theirs in table.items():
        if ours not in KEYS:
            raise section.fail(f"{key}.{ours}", f"not a key (expected one of {' '.join(KEYS)})")
        if not isinstance(theirs, kind) or isinstance(theirs, bool) or theirs == "":
            raise section.fail(f"{key}.{ours}", f"must be {kind_name(kind)}")
        out[ours] = theirs
    return out


def _frames(top: TomlFields) -> FrameSpec:
    s = top.sub("frames")
    spec = FrameSpec(
        encoding=s.choice("encoding", ("binary", "base64", "video-track", "multipart"), "binary"),
        field=s.take("field", str, "frame"),
        control=s.choice("control", ("json", "msgpack"), "json"),
        max_message_bytes=int(
            s.number("max_message_bytes", DEFAULT_MAX_MESSAGE_BYTES, 1023, 256 * 1024 * 1024)
            or DEFAULT_MAX_MESSAGE_BYTES
        ),
    )
    s.done()
    return spec


def _mouse(section: TomlFields) -> dict[str, tuple[float, float]]:
    """``[keys.mouse]``: ``L = { dx = -8 }`` — a key's mouse motion per frame."""
    table = section.sub("mouse")
    out: dict[str, tuple[float, float]] = {}
    for key in list(table.table):
        if key not in KEYS:
            raise table.fail(key, f"not a key (expected one of {' '.join(KEYS)})")
        motion = table.sub(key)
        dx = motion.number("dx", 0.0, -MAX_MOUSE - 1, MAX_MOUSE)
        dy = motion.number("dy", 0.0, -MAX_MOUSE - 1, MAX_MOUSE)
        motion.done()
        if not dx and not dy:
            raise table.fail(key, "moves nothing: give dx and/or dy (per frame)")
        out[key] = (float(dx or 0.0), float(dy or 0.0))
    table.done()
    return out


def _keys(top: TomlFields) -> KeySpec:
    s = top.sub("keys")
    names = _key_table(s, "names", str)
    spec = KeySpec(
        channel=s.choice("channel", ("same", "keys-url", "datachannel"), "same"),
        datachannel=s.take("datachannel", str, "keys"),
        semantics=s.choice("semantics", ("hold", "press", "pose", "frame"), "hold"),
        encoding=s.choice("encoding", ("json", "msgpack"), "json"),
        press_every_ms=s.number("press_every_ms", None, 0, 60_000),
        chunk_frames=int(s.number("chunk_frames", 9, 0, 1024) or 9),
        speed=float(s.number("speed", 1.0, -1e9, 1e9) or 1.0),
        heartbeat_s=s.number("heartbeat_s", None, 0.05, 600),
        names=names,
        codes=_key_table(s, "codes", int),
        no_move=s.take("no_move", str),
        no_turn=s.take("no_turn", str),
        mouse=_mouse(s),
        named=frozenset(names),
    )
    s.done()
    return spec


def _pose(top: TomlFields) -> PoseSpec:
    s = top.sub("pose")
    spec = PoseSpec(
        speed_m_s=float(s.number("speed_m_s", 1.0, 0, 100) or 1.0),
        turn_deg_s=float(s.number("turn_deg_s", 30.0, 0, 720) or 30.0),
        fov_deg=float(s.number("fov_deg", 60.0, 1, 179) or 60.0),
        width=int(s.number("width", 640, 0, 8192) or 640),
        height=int(s.number("height", 360, 0, 8192) or 360),
    )
    s.done()
    return spec


def _stats(top: TomlFields) -> StatsSpec | None:
    if "stats" not in top.table:
        return None
    s = top.sub("stats")
    fields = _string_table(s, "fields")
    for name in fields:
        if name not in STAT_NAMES:
            raise s.fail(f"fields.{name}", f"not a statistic we keep ({', '.join(STAT_NAMES)})")
    spec = StatsSpec(
        match=_match(s, "match"), frames=s.take("frames", str, "frames"), fields=fields
    )
    s.done()
    return spec


def _ready(top: TomlFields) -> ReadySpec | None:
    if "ready" not in top.table:
        return None
    s = top.sub("ready")
    spec = ReadySpec(
        _match(s, "match"),
        float(s.number("timeout_s", 30.0, 0, 3600) or 30.0),
        s.take("fps", str),
    )
    s.done()
    return spec


def _error(top: TomlFields) -> dict[str, Any]:
    """``[error]``: which server messages are errors, and the field holding their words."""
    if "error" not in top.table:
        return {}
    s = top.sub("error")
    out = {"error": _match(s, "match"), "error_field": s.take("field", str, "message")}
    s.done()
    return out


def _templates(top: TomlFields, keys: KeySpec, on_demand: bool = False) -> dict[str, Any]:
    s = top.sub("templates")
    out = {name: s.take(name, (dict, list, str)) for name in TEMPLATE_NAMES}
    s.done()
    templates = {k: v for k, v in out.items() if v is not None}
    needed = {"hold": "keydown", "press": "press", "pose": "pose", "frame": "control"}[
        keys.semantics
    ]
    for name in START_TEMPLATES:
        value = templates.get(name)
        if isinstance(value, list) and not all(isinstance(m, dict) for m in value):
            raise s.fail(name, "a list of messages must be tables ([[templates.NAME]])")
    if needed not in templates and not on_demand:
        raise s.fail(needed, f"missing: keys.semantics = {keys.semantics!r} sends it")
    if keys.heartbeat_s is not None and "heartbeat" not in templates:
        raise s.fail("heartbeat", "missing: keys.heartbeat_s is set")
    for name, template in templates.items():
        try:
            unknown = placeholders_in(template) - set(PLACEHOLDERS)
            if unknown:
                raise TemplateError(
                    f"unknown placeholder {{{sorted(unknown)[0]}}} "
                    f"(known: {', '.join(PLACEHOLDERS)})"
                )
            encode(render(template, SAMPLE_VALUES), keys.encoding)
        except TemplateError as exc:
            raise s.fail(name, f"does not render: {exc}") from None
    return templates


def parse_profile(text: str, path: str) -> ServerProfile:
    """A profile from TOML text; ``path`` names it in errors."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInputError(path, f"not TOML: {exc}") from None
    top = TomlFields(path, doc, "")
    name = top.take("name", str)
    if not name:
        raise top.fail("name", "missing")
    transport = top.take("transport", (str, list), "ws")
    transports = tuple(transport) if isinstance(transport, list) else (transport,)
    for t in transports:
        if t not in TRANSPORTS:
            raise top.fail("transport", f"{t!r} is not one of {', '.join(TRANSPORTS)}")
    on_demand = any(t in ON_DEMAND for t in transports)
    if on_demand and len(transports) > 1:
        raise top.fail("transport", f"{transports[0]!r} is a style of its own: one transport")
    keys = _keys(top)
    own_keys = any(t in OWN_KEYS for t in transports)
    if own_keys and len(transports) > 1:
        raise top.fail("transport", f"{transports[0]!r} is a style of its own: one transport")
    profile = ServerProfile(
        name=name,
        description=top.take("description", str, ""),
        transport=transports,
        url=top.take("url", str, ""),
        path=path,
        fps=top.number("fps", None, 0, 1000),
        response_s=top.number("response_s", None, 0, 600),
        frames=_frames(top),
        keys=keys,
        pose=_pose(top),
        templates=_templates(top, keys, on_demand or own_keys),
        stats=_stats(top),
        ready=_ready(top),
        **_error(top),
        conditioning=read_conditioning(top),
        lease=read_lease(top),
        **_end(top),
        request=read_request(top),
        answer=read_answer(top),
        process=read_process(top),
        claim=_claim(top),
        browser=read_browser(top),
    )
    top.done()
    _check_on_demand(top, profile)
    if profile.conditioning.start == "reset" and transports != ("ws",):
        raise top.fail(
            "conditioning.start", "'reset' keeps a WebSocket open across cases: transport = 'ws'"
        )
    check_conditioning(top, profile.conditioning, profile.templates)
    if keys.channel == "datachannel" and "webrtc" not in transports:
        raise top.fail("keys.channel", "a data channel needs transport = 'webrtc'")
    if profile.browser is not None and not own_keys:
        raise top.fail("browser", "only for transport = 'browser'")
    if own_keys and keys.semantics != "hold":
        raise top.fail("keys.semantics", "a browser's keys are held: 'hold'")
    if profile.lease is not None and transports != ("ws",):
        raise top.fail("lease", "a claimed session is a WebSocket: transport = 'ws'")
    return profile


def _end(top: TomlFields) -> dict[str, Any]:
    """``[end]``: a server message that ends the session (Overworld's ``session_expired``):
    the episode ends there, incomplete, with its words (``field``) or the message itself."""
    if "end" not in top.table:
        return {}
    s = top.sub("end")
    out = {"end": _match(s, "match"), "end_field": s.take("field", str, "message")}
    s.done()
    return out


def _claim(top: TomlFields) -> str | None:
    """``[claim]``: ``text = "25 fps, 1x H100, 720p"``, or its parts as ``fps``, ``gpu`` and
    ``resolution``; checked as ``--claim`` is (``inputs.claims.parse_claim``)."""
    from streameval.inputs.claims import parse_claim

    if "claim" not in top.table:
        return None
    table = top.sub("claim")
    text = table.take("text", str)
    fps = table.number("fps", None, 0, 1000)
    gpu = table.take("gpu", str)
    resolution = table.take("resolution", str)
    table.done()
    parts = [p for p in (None if fps is None else f"{fps:g} fps", gpu, resolution) if p]
    if text is not None and parts:
        raise top.fail("claim", "give text or its parts (fps, gpu, resolution), not both")
    text = text if text is not None else ", ".join(parts)
    if not text:
        raise top.fail("claim", "empty: give text, or fps, gpu and resolution")
    parse_claim(text, f"{top.path}: claim")
    return text


def _check_on_demand(top: TomlFields, profile: ServerProfile) -> None:
    """Each on-demand table belongs to its transport, and that transport needs it."""
    http, process = "http" in profile.transport, "exec" in profile.transport
    if http and (profile.request is None or profile.answer is None):
        raise top.fail("request" if profile.request is None else "answer", "missing: http needs it")
    if process and profile.process is None:
        raise top.fail("process", "missing: exec needs it")
    for table, used, owner in (
        ("request", http, "http"),
        ("answer", http, "http"),
        ("process", process, "exec"),
    ):
        if getattr(profile, table) is not None and not used:
            raise top.fail(table, f"only for transport = {owner!r}")


def read_profile_file(path: Path) -> ServerProfile:
    try:
        if path.stat().st_size > MAX_PROFILE_BYTES:
            raise BadInputError(path, f"larger than {MAX_PROFILE_BYTES} bytes: not a profile")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInputError(path, "no such profile file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInputError(path, f"cannot read: {exc}") from None
    return parse_profile(text, str(path))

"""Wire messages between evaluator and model server (``PROTOCOL.md``): msgpack maps, never
pickle, with size limits checked before anything is allocated.

Every message is a map with a type field ``"t"``. A payload that is not msgpack, too large,
of an unknown type, with a missing or ill-typed field, or whose image bytes do not match its
declared size raises :class:`WireError` with one line saying what is wrong: a transport turns
that into a counted, reported error and goes on (a malformed message never kills a session).

Public-style peers (browser games, the aiortc examples) speak JSON text
(``{"type": "keydown", "key": "w"}``): ``streameval.protocol.public_keys`` builds those.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import msgpack
import numpy as np
import numpy.typing as npt
from streameval.protocol.case_start import (
    MAX_START_TEXT,
    START_NAMES,
    CaseStart,
    parse_start,
    start_body,
)
from streameval.protocol.keys import KEYS, NO_KEY
from streameval.protocol.stop_state import WireStop, parse_stop, stop_body

from streameval.errors import WireError

PROTOCOL_VERSION = 1
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""Largest payload accepted (a raw 4096×4096 RGB frame with depth fits)."""
MAX_FRAME_SIDE = 4096
"""Largest image width or height accepted, in pixels."""
IMAGE_ENCODINGS = ("raw", "jpeg", "png")

ImageEncoding = Literal["raw", "jpeg", "png"]


@dataclass(frozen=True, slots=True)
class Step:
    """Evaluator → server, video clock: render frame ``index`` conditioned on ``key``."""

    index: int
    key: str


@dataclass(frozen=True, slots=True)
class KeyDown:
    """Evaluator → server, wall clock: hold ``key`` from now on (the server plays on)."""

    key: str


@dataclass(frozen=True, slots=True)
class KeyUp:
    key: str


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """Evaluator → server about once a second: the evaluator is still there."""


@dataclass(frozen=True, slots=True)
class Reset:
    """Evaluator → server: start a new episode from the model's initial state, or from a
    case's ``start`` (an image, a caption, intrinsics)."""

    episode: str
    start: CaseStart | None = None


@dataclass(frozen=True, slots=True)
class Bye:
    """Either side: the session is over. A server's ``bye`` naming an ``episode`` refuses
    that episode's start (a case image its model cannot take), in ``reason``."""

    reason: str = ""
    episode: str = ""


@dataclass(frozen=True, slots=True)
class Hello:
    """Server → evaluator: who plays, at what rate and size (retained on MQTT status).
    A size of 0×0 is a model that says its size only with its first frame (``width`` and
    ``height`` are optional attributes of an adapter): the evaluator learns it from there."""

    model: str
    fps: float
    width: int
    height: int
    start: tuple[str, ...] = ()
    """What of a case start (``START_NAMES``) the served model takes; empty: none (an older
    server says nothing, and is sent no case start)."""


@dataclass(frozen=True, slots=True, eq=False)
class Frame:
    """Server → evaluator: one frame, the key that conditioned it and optional geometry.

    ``key`` is None when the server does not say (alignment is then inferred by arrival).
    ``pose`` is 4×4 camera-to-world, ``intrinsics`` 3×3, ``depth`` metric z-depth (h×w).
    """

    index: int
    key: str | None
    image: npt.NDArray[np.uint8]
    t_server: float | None = None
    pose: npt.NDArray[np.float64] | None = None
    intrinsics: npt.NDArray[np.float64] | None = None
    depth: npt.NDArray[np.float32] | None = None


Scalar = str | int | float | bool | None
"""A value a scores message carries in a metric's details or the interactivity block."""
METRIC_STATUSES = ("official", "not_applicable", "missing")
MAX_SCALARS = 64
"""Most details one metric (or the interactivity block) carries on the wire."""


@dataclass(frozen=True, slots=True)
class WireMetric:
    """One metric result as a scores message carries it: the value, its status and the reason
    of a non-official one, and the scalar details the dashboard reads (memory evidence, the
    return gate's state), so a remote watcher shows what a local one shows
    (docs/serve-formats.md#watch-from-elsewhere)."""

    raw: float | None
    normalized: float | None
    status: str
    reason: str | None = None
    details: dict[str, Scalar] = field(default_factory=dict)
    scored: tuple[float, ...] | None = None
    """The final message's values of the scored segments (``details["segments"]``, which
    stays home): a pooled column pools them, so a watcher computes the column and its
    running interval as the table does. None: not sent (a provisional result, an older
    evaluator, a metric without segments)."""


MAX_SEGMENTS = 100_000
"""Most scored segment values one result carries (more: not sent)."""


@dataclass(frozen=True, slots=True)
class ScoresUpdate:
    """Evaluator → watchers: live state of one episode (MQTT ``scores`` topic).

    ``frame``/``key``/``frames_done`` are the latest perceived frame's (the final message
    repeats the last one, so a watcher that missed it still ends on the same frame);
    ``metrics`` the normalized values only (for ``--no-tui`` lines and older watchers),
    ``results`` every result with its status and reason; the final message adds the
    episode's ``frames`` and its scalar ``interactivity`` block. ``error`` and ``warning``
    messages carry only what the evaluator's observers were told.
    """

    episode: str
    model: str
    frame: int
    key: str
    fps: float
    dropped: int
    metrics: dict[str, float | None]
    final: bool = False
    suite: str = ""
    keys: tuple[str, ...] = ()
    boundaries: tuple[int, ...] = ()
    sx: float | None = None
    srad: float | None = None
    error: str | None = None
    complete: bool | None = None
    episode_fps: float | None = None
    frames_done: int | None = None
    frames: int | None = None
    results: dict[str, WireMetric] = field(default_factory=dict)
    interactivity: dict[str, Scalar] = field(default_factory=dict)
    warning: str | None = None
    queue_depth: int | None = None  # the evaluator's perception queue, as its Throughput shows
    received: int | None = None  # frames the evaluator received (dropped ones included)
    case: WireCase | None = None  # a benchmark case's episode: which case, the run's sets
    stop: WireStop | None = None  # a case run's --stop-when rule and where it stands


@dataclass(frozen=True, slots=True)
class WireCase:
    """The benchmark case an episode runs (``set``, ``name``) and, once the evaluator knows
    them (its case run's ``cases.json``), every set's number of cases: what a remote dashboard
    needs to show the case set's progress as a local one does. Older watchers ignore it."""

    set: str
    name: str
    sets: dict[str, int] = field(default_factory=dict)
    max_keys: int | None = None
    """The most keys a case of the run holds (``cases.json``): bounds a pooled column's
    running interval, as the table's (``leaderboard.intervals``)."""


MAX_CASE_TEXT = 1000  # a case or set name on the wire, at most (longer: not a case record)


Message = Step | KeyDown | KeyUp | Heartbeat | Reset | Bye | Hello | Frame | ScoresUpdate


# ---------------------------------------------------------------- encoding


def _image_payload(image: npt.NDArray[np.uint8], encoding: ImageEncoding) -> bytes:
    if encoding == "raw":
        return np.ascontiguousarray(image, dtype=np.uint8).tobytes()
    import cv2

    bgr = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
    ext = ".jpg" if encoding == "jpeg" else ".png"
    params = (
        [cv2.IMWRITE_JPEG_QUALITY, 90] if encoding == "jpeg" else [cv2.IMWRITE_PNG_COMPRESSION, 1]
    )
    ok, buf = cv2.imencode(ext, bgr, params)
    if not ok:
        raise WireError(f"cannot encode a {image.shape} frame as {encoding}")
    return bytes(buf)


def encode(message: Message, *, encoding: ImageEncoding = "raw") -> bytes:
    """One message as msgpack bytes (frames: the image in ``encoding``)."""
    body: dict[str, Any]
    if isinstance(message, Step):
        body = {"t": "step", "i": message.index, "key": message.key}
    elif isinstance(message, KeyDown):
        body = {"t": "keydown", "key": message.key}
    elif isinstance(message, KeyUp):
        body = {"t": "keyup", "key": message.key}
    elif isinstance(message, Heartbeat):
        body = {"t": "heartbeat"}
    elif isinstance(message, Reset):
        body = {"t": "reset", "episode": message.episode}
        if message.start is not None:
            body["start"] = start_body(message.start)
    elif isinstance(message, Bye):
        body = {"t": "bye", "reason": message.reason}
        if message.episode:
            body["episode"] = message.episode
    elif isinstance(message, Hello):
        body = {
            "t": "hello",
            "v": PROTOCOL_VERSION,
            "model": message.model,
            "fps": message.fps,
            "w": message.width,
            "h": message.height,
        }
        if message.start:
            body["start"] = list(message.start)
    elif isinstance(message, Frame):
        h, w = message.image.shape[:2]
        body = {
            "t": "frame",
            "i": message.index,
            "key": message.key,
            "w": w,
            "h": h,
            "enc": encoding,
            "img": _image_payload(message.image, encoding),
        }
        if message.t_server is not None:
            body["ts"] = message.t_server
        if message.pose is not None:
            body["pose"] = np.asarray(message.pose, "<f8").tobytes()
        if message.intrinsics is not None:
            body["K"] = np.asarray(message.intrinsics, "<f8").tobytes()
        if message.depth is not None:
            dh, dw = message.depth.shape
            body["depth"] = {"w": dw, "h": dh, "data": np.asarray(message.depth, "<f4").tobytes()}
    else:
        body = {
            "t": "scores",
            "episode": message.episode,
            "model": message.model,
            "frame": message.frame,
            "key": message.key,
            "fps": message.fps,
            "dropped": message.dropped,
            "metrics": message.metrics,
            "final": message.final,
            "suite": message.suite,
            "keys": list(message.keys),
            "bounds": list(message.boundaries),
            "sx": message.sx,
            "srad": message.srad,
            "error": message.error,
            "complete": message.complete,
            "efps": message.episode_fps,
            "done": message.frames_done,
            "frames": message.frames,
            "results": {
                name: {
                    "raw": m.raw,
                    "n": m.normalized,
                    "status": m.status,
                    "reason": m.reason,
                    "d": m.details,
                    **({} if m.scored is None else {"seg": list(m.scored)}),
                }
                for name, m in message.results.items()
            },
            "inter": message.interactivity,
            "warn": message.warning,
            "queue": message.queue_depth,
            "recv": message.received,
        }
        if message.case is not None:
            body["case"] = {
                "set": message.case.set,
                "name": message.case.name,
                "sets": message.case.sets,
                **({} if message.case.max_keys is None else {"keys": message.case.max_keys}),
            }
        if message.stop is not None:
            body["stop"] = stop_body(message.stop)
    packed: bytes = msgpack.packb(body, use_bin_type=True)
    return packed


# ---------------------------------------------------------------- decoding


def _field(body: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    if name not in body:
        raise WireError(f"{body.get('t')} message without {name!r}")
    value = body[name]
    # bool is an int in Python: never accept it where a number is meant
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise WireError(f"{body.get('t')} message: {name!r} must be {kind}, got bool")
    if not isinstance(value, kind):
        raise WireError(
            f"{body.get('t')} message: {name!r} must be {getattr(kind, '__name__', kind)}, "
            f"got {type(value).__name__}"
        )
    return value


def _optional_number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _wire_key(value: Any, what: str) -> str:
    if not isinstance(value, str) or (value not in KEYS and value != NO_KEY):
        raise WireError(f"{what}: unknown key {value!r} (expected W S A D L R or '-')")
    return value


def _dims(body: dict[str, Any], what: str) -> tuple[int, int]:
    w, h = _field(body, "w", int), _field(body, "h", int)
    if not (0 < w <= MAX_FRAME_SIDE and 0 < h <= MAX_FRAME_SIDE):
        raise WireError(f"{what}: size {w}x{h} outside 1..{MAX_FRAME_SIDE}")
    return w, h


def _hello_dims(body: dict[str, Any]) -> tuple[int, int]:
    """A hello's size: both absent or both 0 is "not known before the first frame" (0, 0);
    otherwise a frame's size, checked as one."""
    w, h = body.get("w", 0), body.get("h", 0)
    if type(w) is int and type(h) is int and w == h == 0:
        return 0, 0
    return _dims(body, "hello message")


def _matrix(body: dict[str, Any], name: str, n: int) -> npt.NDArray[np.float64] | None:
    raw = body.get(name)
    if raw is None:
        return None
    if not isinstance(raw, bytes) or len(raw) != 8 * n * n:
        raise WireError(f"frame message: {name!r} must be {n}x{n} float64 ({8 * n * n} bytes)")
    m = np.frombuffer(raw, "<f8").reshape(n, n).astype(np.float64)
    if not np.isfinite(m).all():
        raise WireError(f"frame message: {name!r} has non-finite values")
    return m


def decode_image(data: bytes, encoding: str, width: int, height: int) -> npt.NDArray[np.uint8]:
    """Image bytes → H×W×3 RGB uint8, checked against the declared size."""
    if encoding == "raw":
        if len(data) != width * height * 3:
            raise WireError(
                f"raw frame of {len(data)} bytes, expected {width}x{height}x3 = "
                f"{width * height * 3}"
            )
        return np.frombuffer(data, np.uint8).reshape(height, width, 3).copy()
    if encoding not in IMAGE_ENCODINGS:
        raise WireError(f"unknown image encoding {encoding!r} (expected raw, jpeg or png)")
    import cv2

    bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if bgr is None:
        raise WireError(f"{encoding} frame of {len(data)} bytes does not decode")
    if bgr.shape[:2] != (height, width):
        raise WireError(
            f"{encoding} frame decodes to {bgr.shape[1]}x{bgr.shape[0]}, declared {width}x{height}"
        )
    return np.asarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), dtype=np.uint8)


def _frame(body: dict[str, Any]) -> Frame:
    index = _field(body, "i", int)
    if index < 0:
        raise WireError(f"frame message: negative index {index}")
    key = body.get("key")
    key = None if key is None else _wire_key(key, "frame message")
    w, h = _dims(body, "frame message")
    image = decode_image(_field(body, "img", bytes), _field(body, "enc", str), w, h)
    depth = None
    if body.get("depth") is not None:
        d = _field(body, "depth", dict)
        dw, dh = _dims(d, "frame depth")
        data = _field(d, "data", bytes)
        if len(data) != 4 * dw * dh:
            raise WireError(f"frame depth of {len(data)} bytes, expected {dw}x{dh} float32")
        depth = np.frombuffer(data, "<f4").reshape(dh, dw).astype(np.float32)
    ts = body.get("ts")
    if ts is not None and (not isinstance(ts, int | float) or not math.isfinite(ts)):
        raise WireError("frame message: 'ts' must be a finite number")
    return Frame(
        index=index,
        key=key,
        image=image,
        t_server=None if ts is None else float(ts),
        pose=_matrix(body, "pose", 4),
        intrinsics=_matrix(body, "K", 3),
        depth=depth,
    )


def _optional_count(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _case(value: Any) -> WireCase | None:
    """The ``case`` of a scores message; anything malformed is no case (the message stays
    valid: the case is extra information for the watcher's case view)."""
    if not isinstance(value, dict):
        return None
    set_name, name, sets = value.get("set"), value.get("name"), value.get("sets")
    if not all(isinstance(v, str) and 0 < len(v) <= MAX_CASE_TEXT for v in (set_name, name)):
        return None
    counts: dict[str, int] = {}
    if isinstance(sets, dict) and len(sets) <= MAX_SCALARS:
        counts = {
            str(k)[:MAX_CASE_TEXT]: v
            for k, v in sets.items()
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0
        }
    keys = value.get("keys")
    max_keys = keys if isinstance(keys, int) and not isinstance(keys, bool) and keys >= 1 else None
    return WireCase(str(set_name), str(name), counts, max_keys)


def _scalars(value: Any, what: str) -> dict[str, Scalar]:
    """A map of plain values (details, the interactivity block); anything else is refused."""
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MAX_SCALARS:
        raise WireError(f"{what} must be a map of at most {MAX_SCALARS} entries")
    if not all(v is None or isinstance(v, str | int | float | bool) for v in value.values()):
        raise WireError(f"{what} holds a value that is no number, string or bool")
    return {str(k): v for k, v in value.items()}


def _results(value: Any) -> dict[str, WireMetric]:
    """The ``results`` map of a scores message: every entry a status (one of
    ``METRIC_STATUSES``), optional numbers, a reason and scalar details."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise WireError("scores message: 'results' must be a map")
    out: dict[str, WireMetric] = {}
    for name, entry in value.items():
        if not isinstance(entry, dict) or entry.get("status") not in METRIC_STATUSES:
            raise WireError(f"scores message: result {name!r} without a known status")
        reason = entry.get("reason")
        out[str(name)] = WireMetric(
            raw=_optional_number(entry.get("raw")),
            normalized=_optional_number(entry.get("n")),
            status=str(entry["status"]),
            reason=None if reason is None else str(reason),
            details=_scalars(entry.get("d"), f"scores message: result {name!r} details"),
            scored=_scored(entry.get("seg")),
        )
    return out


def _scored(value: Any) -> tuple[float, ...] | None:
    """A result's scored segment values; anything malformed is none (the values are extra
    information for the watcher's case view, as the ``case`` map is)."""
    if not isinstance(value, list) or len(value) > MAX_SEGMENTS:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    values = tuple(float(v) for v in value)
    return values if all(math.isfinite(v) for v in values) else None


def decode(payload: bytes, *, max_bytes: int = MAX_MESSAGE_BYTES) -> Message:
    """msgpack bytes → a validated message, or :class:`WireError` with the reason."""
    if len(payload) > max_bytes:
        raise WireError(f"message of {len(payload)} bytes over the {max_bytes}-byte limit")
    try:
        body = msgpack.unpackb(
            payload,
            raw=False,
            strict_map_key=True,
            max_bin_len=max_bytes,
            max_str_len=MAX_START_TEXT,
            max_array_len=1 << 16,
            max_map_len=256,
            max_ext_len=0,  # no extension types: nothing but plain data is ever rebuilt
        )
    except Exception as exc:  # msgpack raises several unrelated types on bad input
        raise WireError(f"not a msgpack message ({type(exc).__name__}: {exc})") from None
    if not isinstance(body, dict):
        raise WireError(f"message is a {type(body).__name__}, expected a map")
    kind = body.get("t")
    if kind == "frame":
        return _frame(body)
    if kind == "step":
        return Step(_field(body, "i", int), _wire_key(body.get("key"), "step message"))
    if kind == "keydown":
        return KeyDown(_wire_key(body.get("key"), "keydown message"))
    if kind == "keyup":
        return KeyUp(_wire_key(body.get("key"), "keyup message"))
    if kind == "heartbeat":
        return Heartbeat()
    if kind == "reset":
        try:
            start = parse_start(body.get("start"), MAX_CASE_TEXT)
        except ValueError as exc:
            raise WireError(f"reset message: {exc}") from None
        return Reset(str(body.get("episode", "")), start)
    if kind == "bye":
        return Bye(str(body.get("reason", "")), str(body.get("episode") or ""))
    if kind == "hello":
        fps = _field(body, "fps", (int, float))
        if not (math.isfinite(fps) and 0 < fps <= 1000):
            raise WireError(f"hello message: fps {fps} outside (0, 1000]")
        w, h = _hello_dims(body)
        start = body.get("start")
        names = start if isinstance(start, list) else []
        takes = tuple(n for n in START_NAMES if n in names)  # unknown names: a newer server's
        return Hello(str(body.get("model", "")), float(fps), w, h, takes)
    if kind == "scores":
        metrics = _field(body, "metrics", dict)
        return ScoresUpdate(
            episode=str(_field(body, "episode", str)),
            model=str(body.get("model", "")),
            frame=_field(body, "frame", int),
            key=str(body.get("key", "-")),
            fps=float(_field(body, "fps", (int, float))),
            dropped=_field(body, "dropped", int),
            metrics={
                str(k): (float(v) if isinstance(v, int | float) else None)
                for k, v in metrics.items()
            },
            final=bool(body.get("final", False)),
            suite=str(body.get("suite", "")),
            keys=tuple(_wire_key(k, "scores message") for k in body.get("keys") or ()),
            boundaries=tuple(int(b) for b in body.get("bounds") or () if isinstance(b, int)),
            sx=_optional_number(body.get("sx")),
            srad=_optional_number(body.get("srad")),
            error=None if body.get("error") is None else str(body["error"]),
            complete=None if body.get("complete") is None else bool(body["complete"]),
            episode_fps=_optional_number(body.get("efps")),
            frames_done=_optional_count(body.get("done")),
            frames=_optional_count(body.get("frames")),
            results=_results(body.get("results")),
            interactivity=_scalars(body.get("inter"), "scores message 'inter'"),
            warning=None if body.get("warn") is None else str(body["warn"]),
            queue_depth=_optional_count(body.get("queue")),
            received=_optional_count(body.get("recv")),
            case=_case(body.get("case")),
            stop=parse_stop(body.get("stop")),
        )
    raise WireError(f"unknown message type {kind!r}")

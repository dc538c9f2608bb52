"""What one server message on a WebSocket is, by the profile: a frame, a chunk's statistics,
the answer to ``configure``, a server error, or something to ignore — or a problem, one line.

Pure functions over bytes and text (the message-stream fuzz suite drives them directly):
sizes are checked before anything is decoded, an image must be a whole JPEG (SOI … EOI) or
PNG (signature … IEND) before OpenCV sees it, and a message of the wrong kind (text where the
profile says frames are binary, binary where it says JSON) is named as such.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import msgpack
import numpy as np
import numpy.typing as npt

from streameval.errors import MessageProblem
from streameval.protocol.wire import MAX_FRAME_SIDE
from streameval.transports.profiles import ServerProfile
from streameval.transports.profiles.model import lookup

JPEG_SOI, JPEG_EOI = b"\xff\xd8\xff", b"\xff\xd9"
PNG_SIGNATURE, PNG_IEND = b"\x89PNG\r\n\x1a\n", b"IEND\xaeB`\x82"
MAX_CONTROL_BYTES = 1024 * 1024
"""A control message (JSON or msgpack, not a frame) larger than this is refused unread."""


@dataclass(frozen=True, slots=True)
class Incoming:
    kind: Literal["frame", "stats", "ready", "error", "end", "other"]
    image: npt.NDArray[np.uint8] | None = None
    frames: int | None = None
    stats: dict[str, float] = field(default_factory=dict)
    text: str = ""


def decode_image(data: bytes, what: str) -> npt.NDArray[np.uint8]:
    """A whole JPEG or PNG → H×W×3 RGB, or ``MessageProblem`` (not an image, truncated, does
    not decode, too large a side)."""
    if data.startswith(JPEG_SOI):
        kind = "JPEG"
        if not data.rstrip(b"\x00").endswith(JPEG_EOI):
            raise MessageProblem(f"{what}: truncated JPEG of {len(data)} bytes (no end marker)")
    elif data.startswith(PNG_SIGNATURE):
        kind = "PNG"
        if not data.endswith(PNG_IEND):
            raise MessageProblem(f"{what}: truncated PNG of {len(data)} bytes (no IEND chunk)")
    else:
        raise MessageProblem(f"{what}: {len(data)} bytes that are neither JPEG nor PNG")
    import cv2

    bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if bgr is None or bgr.ndim != 3:
        raise MessageProblem(f"{what}: {kind} of {len(data)} bytes does not decode")
    if max(bgr.shape[:2]) > MAX_FRAME_SIDE:
        raise MessageProblem(
            f"{what}: {kind} of {bgr.shape[1]}x{bgr.shape[0]} over {MAX_FRAME_SIDE}"
        )
    return np.asarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), dtype=np.uint8)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _control(body: Any, profile: ServerProfile, raw: Any) -> Incoming:
    """A decoded control message (a map) → what it is for us."""
    if not isinstance(body, dict):
        return Incoming("other")
    stats = profile.stats
    if stats is not None and stats.match.matches(body):
        frames = _number(lookup(body, stats.frames)) if stats.frames else None
        values = {
            ours: v
            for ours, theirs in stats.fields.items()
            if (v := _number(lookup(body, theirs))) is not None
        }
        count = int(frames) if frames is not None and 0 <= frames <= 1_000_000 else None
        return Incoming("stats", frames=count, stats=values)
    if profile.ready is not None and profile.ready.match.matches(body):
        fps = _number(lookup(body, profile.ready.fps)) if profile.ready.fps else None
        announced = {"fps": fps} if fps is not None and 0 < fps <= 1000 else {}
        return Incoming("ready", stats=announced)
    if profile.end is not None and profile.end.matches(body):
        text = lookup(body, profile.end_field)
        return Incoming("end", text=" ".join(str(text if text is not None else raw).split())[:300])
    if profile.error is not None and profile.error.matches(body):
        text = lookup(body, profile.error_field)
        return Incoming(
            "error", text=" ".join(str(text if text is not None else raw).split())[:300]
        )
    if profile.frames.encoding == "base64":
        payload = lookup(body, profile.frames.field)
        if payload is not None:
            return _base64_frame(payload)
    return Incoming("other")


def _base64_frame(payload: Any) -> Incoming:
    if isinstance(payload, bytes):  # msgpack may carry the bytes themselves
        return Incoming("frame", image=decode_image(payload, "frame"))
    if not isinstance(payload, str):
        raise MessageProblem(f"frame field is a {type(payload).__name__}, expected base64 text")
    text = payload.split(",", 1)[1] if payload.startswith("data:") else payload
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise MessageProblem(f"frame field of {len(text)} characters is not base64") from None
    return Incoming("frame", image=decode_image(data, "base64 frame"))


def read_text(text: str, profile: ServerProfile) -> Incoming:
    """A text message: JSON control (or a base64 frame inside it)."""
    if len(text) > profile.frames.max_message_bytes:
        raise MessageProblem(f"text message of {len(text)} characters over the size limit")
    if profile.frames.encoding == "base64":
        limit = profile.frames.max_message_bytes
    else:
        limit = MAX_CONTROL_BYTES
    if len(text) > limit:
        raise MessageProblem(
            f"text message of {len(text)} characters where binary frames were expected"
        )
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        hint = " where binary frames were expected" if profile.frames.encoding == "binary" else ""
        raise MessageProblem(f"text message of {len(text)} characters is not JSON{hint}") from None
    return _control(body, profile, text)


def read_binary(data: bytes, profile: ServerProfile) -> Incoming:
    """A binary message: an image frame, or msgpack control when the profile says so."""
    if len(data) > profile.frames.max_message_bytes:
        raise MessageProblem(f"binary message of {len(data)} bytes over the size limit")
    if profile.frames.encoding == "binary" and data.startswith((JPEG_SOI, PNG_SIGNATURE)):
        return Incoming("frame", image=decode_image(data, "binary frame"))
    if profile.frames.control == "msgpack":
        try:
            body = msgpack.unpackb(
                data,
                raw=False,
                strict_map_key=False,
                max_bin_len=profile.frames.max_message_bytes,
                max_str_len=profile.frames.max_message_bytes,
                max_array_len=1 << 16,
                max_map_len=1024,
                max_ext_len=0,
            )
        except Exception as exc:  # msgpack raises several unrelated types on bad input
            if profile.frames.encoding == "binary":
                raise MessageProblem(
                    f"binary message of {len(data)} bytes is neither JPEG, PNG nor msgpack"
                ) from None
            raise MessageProblem(f"binary message is not msgpack ({type(exc).__name__})") from None
        return _control(body, profile, "msgpack message")
    if profile.frames.encoding == "binary":
        return Incoming("frame", image=decode_image(data, "binary frame"))
    raise MessageProblem(f"binary message of {len(data)} bytes where JSON text was expected")


LABEL_FIELDS = ("type", "event", "kind", "cmd", "op", "action", "status")
"""Fields that name a control message's kind, in the order the field's servers use them."""
MAX_LABELLED_TEXT = 64 * 1024
"""Text messages longer than this are not parsed again to be named (a base64 frame)."""


class MessageTally:
    """What a server sent, by kind (``type=ready``, ``binary frame``...), and the last message
    of each kind: so a session that waits for a message the server never sends can say what
    it sent instead, and ``streameval probe`` can list a new server's messages."""

    MAX_KINDS = 64

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.last: dict[str, dict[str, Any]] = {}

    def add(self, data: str | bytes) -> None:
        label, body = _label(data)
        if label not in self.counts and len(self.counts) >= self.MAX_KINDS:
            label, body = "other", None
        self.counts[label] = self.counts.get(label, 0) + 1
        if body is not None:
            self.last[label] = body

    def frames(self) -> int:
        return sum(n for label, n in self.counts.items() if label.endswith("frame"))

    def describe(self, limit: int = 6) -> str:
        """``"120 binary frame, 8 type=chunk_done, 1 type=configuring"``, most frequent first."""
        if not self.counts:
            return "nothing"
        ranked = sorted(self.counts.items(), key=lambda item: (-item[1], item[0]))
        parts = [f"{n} {label}" for label, n in ranked[:limit]]
        if len(ranked) > limit:
            parts.append(f"{len(ranked) - limit} more kinds")
        return ", ".join(parts)


def _label(data: str | bytes) -> tuple[str, dict[str, Any] | None]:
    if isinstance(data, bytes):
        if data.startswith((JPEG_SOI, PNG_SIGNATURE)):
            return "binary frame", None
        try:
            body = msgpack.unpackb(data[:MAX_LABELLED_TEXT], raw=False, strict_map_key=False)
        except Exception:  # msgpack raises several unrelated types on bad input
            return "binary message", None
        return _named(body, "msgpack")
    if len(data) > MAX_LABELLED_TEXT:
        return "large text message", None
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        return "text (not JSON)", None
    return _named(body, "JSON")


def _named(body: Any, codec: str) -> tuple[str, dict[str, Any] | None]:
    if not isinstance(body, dict):
        return f"{codec} {type(body).__name__}", None
    for name in LABEL_FIELDS:
        value = body.get(name)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return f"{name}={value}"[:60], body
    return f"{codec} object", body

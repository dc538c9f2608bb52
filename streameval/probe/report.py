"""What a probe found, as one object (``--json``) and as the table ``streameval probe``
prints: the server's facts (delivered fps beside announced, chunk lengths, resolution, the
messages it sends, whether it started from the case image), then one row per name pressed,
then the mapping or why there is none."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from streameval.errors import redact_url
from streameval.probe.classify import KeyMotion
from streameval.probe.mapping import Mapping
from streameval.probe.session import ProbeSession

MAX_BURST_LENGTHS = 3
"""More distinct lengths than this between pauses in the arrivals is transport jitter (a
video track's), not a server's chunks: no chunk length is reported."""


@dataclass(frozen=True, slots=True)
class ServerFacts:
    fps_measured: float | None
    fps_announced: float | None
    fps_profile: float | None
    chunk_first: int | None
    chunk_later: list[int]
    chunk_origin: str | None  # "server" (its statistics messages) or "bursts" (arrivals)
    resolution: tuple[int, int] | None
    frames: int
    messages: dict[str, int]
    case_similarity: float | None = None
    case_honoured: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "fps_measured": None if self.fps_measured is None else round(self.fps_measured, 2),
            "fps_announced": self.fps_announced,
            "fps_profile": self.fps_profile,
            "chunk_first": self.chunk_first,
            "chunk_later": self.chunk_later,
            "chunk_origin": self.chunk_origin,
            "resolution": list(self.resolution) if self.resolution else None,
            "frames": self.frames,
            "messages": dict(self.messages),
            "case_similarity": (
                None if self.case_similarity is None else round(self.case_similarity, 3)
            ),
            "case_honoured": self.case_honoured,
        }


def delivered_fps(times: list[float], presses: Sequence[float] = ()) -> float | None:
    """Frames per second of wall time over the spans the server generates (what it really
    delivers, whatever it announces): an interval across a keydown in ``presses`` is left
    out, so a server silent at rest is not charged for the rests nor for the wait for its
    first chunk; a pause inside a press (a slow chunk) counts."""
    t = np.asarray(times, dtype=np.float64)
    if t.size < 2 or t[-1] <= t[0]:
        return None
    dt = np.diff(t)
    keep = np.ones(dt.size, dtype=bool)
    for down in presses:
        keep &= ~((t[:-1] < down) & (t[1:] >= down))
    span = float(dt[keep].sum())
    return int(keep.sum()) / span if span > 0 else None


def announced_fps(last_messages: dict[str, dict[str, Any]]) -> float | None:
    """An ``fps`` the server stated in one of its messages (WorldFoundry's ``ready``)."""
    for body in last_messages.values():
        value = body.get("fps")
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value)
    return None


def server_facts(
    session: ProbeSession,
    profile_fps: float | None,
    similarity: float | None = None,
    honoured: bool | None = None,
) -> ServerFacts:
    chunks = [c.frames for c in session.chunks]
    origin = session.chunks[0].origin if session.chunks else None
    # the last chunk may be cut short by the session's end
    later = sorted(set(chunks[1:-1] if len(chunks) > 2 else chunks[1:]))
    if origin == "bursts" and len(later) > MAX_BURST_LENGTHS:
        chunks, later, origin = [], [], "irregular"  # jitter, not chunks: no length to say
    return ServerFacts(
        fps_measured=delivered_fps(session.times, [w.t_down for w in session.windows]),
        fps_announced=announced_fps(session.last_messages),
        fps_profile=profile_fps,
        chunk_first=chunks[0] if chunks else None,
        chunk_later=later,
        chunk_origin=origin,
        resolution=session.size,
        frames=len(session.times),
        messages=session.messages,
        case_similarity=similarity,
        case_honoured=honoured,
    )


MAX_SAID = 5
"""Distinct server error messages the report quotes."""


@dataclass
class ProbeReport:
    url: str
    profile: str
    server: ServerFacts
    rest: KeyMotion | None
    keys: list[KeyMotion]
    mapping: Mapping
    end_reason: str | None = None
    written: str | None = None
    errors: list[str] = field(default_factory=list)
    adapter: str | None = None  # python:M:F: the model's name and where it runs (no profile)

    def __post_init__(self) -> None:
        # a claim URL's passphrase goes nowhere: not the table, the JSON, the written profile
        self.url = redact_url(self.url)

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "profile": self.profile or None,
            "adapter": self.adapter,
            "server": self.server.to_json(),
            "no_key": self.rest.to_json() if self.rest else None,
            "keys": [k.to_json() for k in self.keys],
            "mapping": self.mapping.names if self.mapping.complete else None,
            "found": self.mapping.names,
            "problems": self.mapping.problems,
            "aliases": self.mapping.aliases,
            "ended_early": self.end_reason,
            "written": self.written,
            "server_said": self.server_said(),
        }

    def response_s(self) -> float | None:
        """The median response of the chosen names (seconds from a press to the picture
        answering it: a chunked server's first chunk), or None when none was measured."""
        chosen = set(self.mapping.names.values())
        times = sorted(
            m.response_s for m in self.keys if m.name in chosen and m.response_s is not None
        )
        if not times:
            return None
        mid = len(times) // 2
        return times[mid] if len(times) % 2 else (times[mid - 1] + times[mid]) / 2

    def server_said(self) -> list[str]:
        """The server's own error words, each once, in order (a server that refuses a key
        name it does not know says so: quoted, not only counted)."""
        return list(dict.fromkeys(e for e in self.errors if "server says: " in e))[:MAX_SAID]

    def table(self) -> str:
        s = self.server
        via = f"adapter {self.adapter}" if self.adapter else f"profile {self.profile}"
        lines = [f"server      {self.url} ({via})"]
        if self.adapter:  # stepped: its fps is the video's, its pace is how fast it steps
            pace = "not measured"
            if s.fps_measured and s.fps_announced:
                ratio = s.fps_measured / s.fps_announced
                pace = f"{s.fps_measured:.1f} frames a second ({ratio:.2f}x real time)"
            lines.append(f"fps         {s.fps_announced or 0:g} (the model's); it stepped {pace}")
        else:
            lines += self._stream_lines()
        res = f"{s.resolution[0]}x{s.resolution[1]}" if s.resolution else "no frame"
        lines.append(f"resolution  {res}, {s.frames} frames")
        if not self.adapter:
            msgs = ", ".join(f"{n} {k}" for k, n in sorted(s.messages.items(), key=lambda i: -i[1]))
            lines.append(f"messages    {msgs or 'not listed for this transport'}")
        for words in self.server_said():
            lines.append(f"server said {words.split('server says: ', 1)[1]}")
        if s.case_similarity is not None:
            verdict = "started from it" if s.case_honoured else "did NOT start from it"
            lines.append(f"case image  {verdict} (similarity {s.case_similarity:.2f})")
        lines.append("")
        header = ("name", "does", "speed", "p_yaw", "response", "ease-in", "ease-out")
        rows: list[tuple[str, ...]] = [header]
        for m in [*([self.rest] if self.rest else []), *self.keys]:
            rows.append(_row(m))
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for r in rows:
            lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        lines.append("")
        if self.mapping.complete:
            names = " ".join(f"{k}={v}" for k, v in self.mapping.names.items())
            lines.append(f"mapping     {names}")
        for key, others in self.mapping.aliases.items():
            chosen = self.mapping.names[key]
            lines.append(f"alias       {key}: {', '.join(others)} does it too ({chosen} chosen)")
        for problem in self.mapping.problems:
            lines.append(f"no mapping: {problem}")
        if self.end_reason:
            lines.append(f"ended early: {self.end_reason}")
        if self.written:
            lines.append(f"written     {self.written}")
        return "\n".join(lines)

    def _stream_lines(self) -> list[str]:
        """A server's fps (delivered beside announced) and its chunks."""
        s = self.server
        lines: list[str] = []
        fps = f"{s.fps_measured:.2f} delivered" if s.fps_measured else "not measured"
        said = [f"{s.fps_announced:g} announced"] if s.fps_announced else []
        said += [f"{s.fps_profile:g} in the profile"] if s.fps_profile else []
        lines.append(f"fps         {fps}" + (f" ({', '.join(said)})" if said else ""))
        if s.chunk_first is not None:
            later = "/".join(str(n) for n in s.chunk_later) or "-"
            how = "" if s.chunk_origin == "server" else " (from pauses between arrivals)"
            lines.append(f"chunks      first {s.chunk_first} frames, then {later}{how}")
        elif s.chunk_origin == "irregular":
            lines.append("chunks      not measurable: arrivals pause irregularly, no statistics")
        else:
            lines.append("chunks      none seen (evenly paced frames, no statistics)")
        return lines


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _row(m: KeyMotion) -> tuple[str, ...]:
    does = m.motion + (f" + {m.mixed}" if m.mixed else "")
    speed = "-" if m.speed is None else f"{m.speed:.3g} {m.unit}"
    p_yaw = "-" if m.p_yaw is None else f"{m.p_yaw:.2f}"
    return (
        m.name,
        does,
        speed,
        p_yaw,
        _seconds(m.response_s),
        _seconds(m.ease_in_s),
        _seconds(m.ease_out_s),
    )

"""``[lease]``: a server whose socket is lent for a session, claimed over HTTP first.

Hosted world models share a few GPUs between many players (Overworld's world engine: ``GET
/claim?key=PASSPHRASE`` answers ``{"success", "port", "session_id", "expires_in"}``; the socket
is ``ws://HOST:PORT/ws?session_id=…``; ``GET /heartbeat?session_id=…`` keeps the claim;
``POST /release {"session_id"}`` gives the GPU back). A profile with a ``[lease]`` table is
attached with the claim URL (``http(s)://``); every name of the lifecycle is data here, so a
router of another shape is a table, not code (docs/serve-formats.md#overworld). The transport
side is ``transports/websocket/lease.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from streameval.transports.profiles.fields import TomlFields

DEFAULT_SOCKET = "{ws}://{host}:{port}/ws?session_id={session_id}"


@dataclass(frozen=True, slots=True)
class LeaseSpec:
    """How a session is claimed, kept and given back.

    ``socket``: the WebSocket URL, a template over the claim's answer (its top-level fields:
    ``{port}``, ``{session_id}``, …) and the claim URL's ``{host}`` and ``{ws}`` (``ws`` for
    an ``http://`` claim, ``wss`` for ``https://``). ``ok``: the answer's field that is true
    when a slot was granted; ``reason``: its words when not. ``session``: the answer's field
    naming the session (``{session_id}`` in the other templates). ``expires``: the answer's
    field with the seconds the claim lasts (an episode that cannot fit is refused before it
    plays). ``heartbeat``: a path (or URL) GET every ``heartbeat_s`` while the session runs;
    an answer whose ``ok`` is false ends the episode with its ``reason``. ``release``: a path
    (or URL) POSTed with ``release_body`` (JSON) when the episode ends, however it ends.
    ``secret``: the claim URL's query field that holds the passphrase: never written to
    results, logs or error lines. Paths are on the claim URL's host and port."""

    socket: str = DEFAULT_SOCKET
    ok: str = "success"
    reason: str = "error"
    session: str = "session_id"
    expires: str | None = "expires_in"
    heartbeat: str | None = None
    heartbeat_s: float = 1.0
    release: str | None = None
    release_body: dict[str, Any] = field(default_factory=dict)
    secret: str | None = None
    timeout_s: float = 10.0


def read_lease(top: TomlFields) -> LeaseSpec | None:
    """``[lease]``, checked: its templates name only what a claim's answer can give."""
    if "lease" not in top.table:
        return None
    s = top.sub("lease")
    spec = LeaseSpec(
        socket=s.take("socket", str, DEFAULT_SOCKET),
        ok=s.take("ok", str, "success"),
        reason=s.take("reason", str, "error"),
        session=s.take("session", str, "session_id"),
        expires=s.take("expires", str, "expires_in"),
        heartbeat=s.take("heartbeat", str),
        heartbeat_s=float(s.number("heartbeat_s", 1.0, 0.05, 600) or 1.0),
        release=s.take("release", str),
        release_body=s.take("release_body", dict, {}),
        secret=s.take("secret", str),
        timeout_s=float(s.number("timeout_s", 10.0, 0, 600) or 10.0),
    )
    s.done()
    if not spec.socket.startswith("{ws}://") and not spec.socket.startswith(("ws://", "wss://")):
        raise s.fail("socket", f"{spec.socket!r}: expected {{ws}}://… or ws(s)://…")
    for name, path in (("heartbeat", spec.heartbeat), ("release", spec.release)):
        if path is not None and not path.startswith(("/", "http://", "https://")):
            raise s.fail(name, f"{path!r}: expected /PATH (on the claim's host) or http(s)://")
    if spec.release_body and spec.release is None:
        raise s.fail("release_body", "only with release (the URL it is POSTed to)")
    return spec

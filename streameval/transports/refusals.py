"""A server's refusal of a session, and whether it is worth asking again.

A refused case (no image, a key it does not know) stays refused; a server that holds one
session at a time and refuses the next because another still holds it frees itself soon:
WorldFoundry Studio answers ``RuntimeError: A realtime world session is already active.``
until the chunk its one model thread was generating when the last episode closed is done,
and the next episode's connect comes within milliseconds of that close.
"""

from __future__ import annotations

REFUSED = "the server refused the session: "
"""How a transport's end reason starts when the server refused the session (its words
follow)."""

BUSY_WORDS = ("already active", "busy", "another session", "in use", "too many sessions")


def busy_words(reason: str | None) -> str | None:
    """The server's words in ``reason`` when it is a refusal that says another session still
    holds the server (``BUSY_WORDS``, any case); None otherwise."""
    if reason is None or not reason.startswith(REFUSED):
        return None
    words = reason[len(REFUSED) :]
    return words if any(w in words.lower() for w in BUSY_WORDS) else None

"""A claimed session's lifecycle (``[lease]``, ``profiles/lease.py``): claim, heartbeat,
release — over HTTP, beside the WebSocket the claim lends.

``claim`` GETs the claim URL and reads the JSON answer: a refusal (``no_gpu_available``,
``invalid_key``) or an answer that is not one is ``BadInputError`` in one line with the
server's words (exit 2: the user's passphrase, or a busy server, not a model fault).
``heartbeat`` runs while the session does and ends it when the server says the claim is
gone. ``release`` POSTs the release once, whatever ended the episode (its end, a fault, an
interrupt: ``WebSocketSource.close_transport``); a release that fails is reported, never
raised — the claim expires by itself on the server, and the results stand.

The passphrase is in the claim URL's query (``secret``): ``display_url`` hides it, and only
that form is ever written or printed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from streameval.errors import BadInputError, TemplateError, one_line
from streameval.transports.profiles.lease import LeaseSpec
from streameval.transports.profiles.templates import render

HIDDEN = "***"
MAX_ANSWER_CHARS = 300


def display_url(url: str, secret: str | None) -> str:
    """``url`` with the value of its query field ``secret`` hidden (the passphrase)."""
    if not secret:
        return url
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not any(name == secret for name, _ in query):
        return url
    hidden = [(name, HIDDEN if name == secret else value) for name, value in query]
    return urlunsplit(parts._replace(query=urlencode(hidden, safe="*")))


@dataclass
class Claim:
    """A granted session: the socket to open and the answer's fields (the templates' values)."""

    socket: str
    values: dict[str, Any]
    expires_s: float | None


class Lease:
    """One claimed session on ``url`` (the claim URL), as ``spec`` says."""

    def __init__(self, spec: LeaseSpec, url: str, shown: str) -> None:
        self.spec = spec
        self.url = url
        self.shown = shown  # the URL as it may be written (``display_url``)
        self.claim: Claim | None = None
        self.released = False
        self.heartbeats = 0

    def _timeout(self) -> Any:
        import aiohttp

        return aiohttp.ClientTimeout(total=self.spec.timeout_s)

    async def _answer(self, response: Any, what: str) -> dict[str, Any]:
        text = await response.text(errors="replace")
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            words = one_line(text)[:MAX_ANSWER_CHARS]
            raise ConnectionError(
                f"{what}: HTTP {response.status}, not a JSON object: {words!r}"
            ) from None
        return body

    def _words(self, body: dict[str, Any]) -> str:
        reason = body.get(self.spec.reason)
        return one_line(str(reason if reason is not None else body))[:MAX_ANSWER_CHARS]

    async def acquire(self, session: Any) -> Claim:
        """Claim a slot; ``BadInputError`` (one line) when the server refuses or cannot be
        reached, or its answer is not a claim."""
        import aiohttp

        try:
            async with session.get(self.url, timeout=self._timeout()) as response:
                body = await self._answer(response, "the claim")
        except (aiohttp.ClientError, OSError, TimeoutError, ConnectionError) as exc:
            raise BadInputError(self.shown, f"claim failed: {one_line(str(exc))}") from None
        if body.get(self.spec.ok) is not True:
            raise BadInputError(self.shown, f"the server refused the claim: {self._words(body)}")
        session_id = body.get(self.spec.session)
        if not isinstance(session_id, str | int) or session_id == "":
            raise BadInputError(
                self.shown, f"the claim's answer names no session ({self.spec.session!r})"
            )
        parts = urlsplit(self.url)
        values = {
            k: v
            for k, v in body.items()
            if isinstance(v, str | int | float) and not isinstance(v, bool)
        }
        values.update(
            host=parts.hostname or "127.0.0.1",
            ws="wss" if parts.scheme == "https" else "ws",
        )
        expires = body.get(self.spec.expires) if self.spec.expires else None
        expires_s = float(expires) if isinstance(expires, int | float) and expires > 0 else None
        self.claim = Claim("", values, expires_s)  # claimed: released from here on
        try:
            socket = str(render(self.spec.socket, values))
        except TemplateError as exc:
            raise BadInputError(
                self.shown, f"[lease] socket: {exc} in the claim's answer"
            ) from None
        self.claim.socket = socket
        return self.claim

    def _path(self, template: str) -> str:
        assert self.claim is not None
        return urljoin(self.url, str(render(template, self.claim.values)))

    async def beat(
        self, session: Any, lost: Callable[[str], None], warn: Callable[[str], None]
    ) -> None:
        """Heartbeats until cancelled; a claim the server says is gone ends the episode."""
        import aiohttp

        if self.spec.heartbeat is None or self.claim is None:
            return
        url = self._path(self.spec.heartbeat)
        failures = 0
        while True:
            await asyncio.sleep(self.spec.heartbeat_s)
            try:
                async with session.get(url, timeout=self._timeout()) as response:
                    body = await self._answer(response, "a heartbeat")
            except (aiohttp.ClientError, OSError, TimeoutError, ConnectionError) as exc:
                failures += 1
                if failures == 1:  # once: the socket says soon enough if the server is gone
                    warn(f"heartbeat failed: {one_line(str(exc))}")
                continue
            self.heartbeats += 1
            if body.get(self.spec.ok) is not True:
                lost(f"the server ended the claim: {self._words(body)}")
                return

    async def release(self, session: Any) -> str | None:
        """Give the slot back (once); the problem in one line, or None."""
        import aiohttp

        if self.claim is None or self.released or self.spec.release is None:
            return None
        self.released = True
        url = self._path(self.spec.release)
        body = render(self.spec.release_body, self.claim.values) if self.spec.release_body else {}
        try:
            async with session.post(url, json=body, timeout=self._timeout()) as response:
                answer = await self._answer(response, "the release")
        except (aiohttp.ClientError, OSError, TimeoutError, ConnectionError) as exc:
            return f"release failed: {one_line(str(exc))}"
        if answer.get(self.spec.ok) is not True:
            return f"the server refused the release: {self._words(answer)}"
        return None

"""``attach http://HOST:PORT/PATH --profile NAME``: a request-response server (aiohttp client).

A server that generates a clip per request and answers only when it is done (Yume's web app:
``yume-webapp``): per chunk, or per key segment, one request whose JSON body is the profile's
``[request] body`` template (``[request] first`` replaces fields of the episode's first); the
frames are read from the answer as ``[answer]`` says — the video's bytes in the body, a URL
to GET (relative ones against the request's), or a file on a filesystem we share (with
``path_map``) — decoded with PyAV (``clips.py``), optionally only the last ``keep_last``
frames. The driving, alignment and timing are ``OnDemandSource``'s (``ondemand.py``).

Faults (docs/serve-formats.md#faults), each one line: a server unreachable when we connect is
bad input (exit 2); once the episode runs, an HTTP error (its status and its body's first
line), an error field in the answer, an answer that is not JSON or not a video, a path that
does not exist here, a video with no frames, or no answer within ``[request] timeout_s``
ends it incomplete with what came.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from streameval.constants import DEFAULT_FPS
from streameval.core.arrays import Image
from streameval.errors import BadInputError, ClipError, GenerationFault, TemplateError, one_line
from streameval.transports.clips import decode_clip
from streameval.transports.live_config import ServerInfo
from streameval.transports.ondemand import OnDemandSource
from streameval.transports.profiles.model import lookup
from streameval.transports.profiles.ondemand import AnswerSpec, RequestSpec

MAX_JSON_BYTES = 16 * 1024 * 1024
READ_BLOCK = 1024 * 1024
FIRST_LINE_CHARS = 200


def first_line(data: bytes) -> str:
    """The first non-empty line of a body, short, for an error line."""
    text = data.decode("utf-8", errors="replace")
    for line in text.splitlines():
        if line.strip():
            return one_line(line)[:FIRST_LINE_CHARS]
    return "(empty body)"


class SegmentSource(OnDemandSource):
    scheme = "http"

    def prepare(self) -> None:
        profile = self.profile
        if profile.request is None or profile.answer is None:
            raise BadInputError(profile.path, "transport http needs [request] and [answer]")
        self.request: RequestSpec = profile.request
        self.answer: AnswerSpec = profile.answer
        self.per_segment = self.request.per == "segment"
        self._session: Any = None
        self.check()

    def check(self) -> None:
        """Render the request for every key of the episode before anything connects: a key
        with no name on a channel is bad input now, not a lost episode later."""
        for key in set(self.keys) or {"W"}:
            for template, what in ((self.request.body, "body"), (self._first_body(), "first")):
                try:
                    self.render_for(template, key, 1, f"[request] {what}")
                except TemplateError as exc:
                    raise BadInputError(self.profile.path, str(exc)) from None

    def _first_body(self) -> dict[str, Any]:
        return {**self.request.body, **self.request.first}

    # ------------------------------------------------------------ LiveSource hooks

    async def open_transport(self) -> ServerInfo:
        """Nothing is generated yet (a request is a chunk): only check the server listens."""
        import aiohttp

        parts = urlsplit(self.url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            _, writer = await asyncio.open_connection(host, port)
        except OSError as exc:
            raise BadInputError(self.url, f"server unreachable: {one_line(str(exc))}") from None
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
        self._session = aiohttp.ClientSession()
        fps = self.fps_hint or self.profile.fps or DEFAULT_FPS
        return ServerInfo(host or "remote", fps)

    async def close_transport(self) -> None:
        if self._session is not None:
            with contextlib.suppress(Exception):
                await self._session.close()

    # ------------------------------------------------------------ one chunk

    async def generate(self, key: str, values: dict[str, Any]) -> list[Image]:
        template = self._first_body() if self.chunk == 0 else self.request.body
        body = self.render_for(template, key, values["frames"], "[request] body")
        what = f"chunk {self.chunk} (key {key})"
        timeout = self.request.timeout_s
        try:
            async with asyncio.timeout(timeout):
                frames = await self._ask(body, what)
        except TimeoutError:
            raise GenerationFault(f"{what}: no answer within {timeout:g} s") from None
        keep = self.answer.keep_last
        return frames[-keep:] if keep else frames

    async def _ask(self, body: Any, what: str) -> list[Image]:
        import aiohttp

        try:
            async with self._session.request(self.request.method, self.url, json=body) as resp:
                data = await self._read(resp, what)
                kind = resp.headers.get("Content-Type", "no type").split(";")[0]
            if self.answer.kind == "video":
                return await self._decode(data, f"{what}: the answer ({kind}, {len(data)} bytes)")
            return await self._from_json(data, kind, what)
        except (aiohttp.ClientError, OSError) as exc:
            text = one_line(str(exc)) or type(exc).__name__
            raise GenerationFault(f"{what}: request failed: {text}") from None

    async def _read(self, resp: Any, what: str, limit: int | None = None) -> bytes:
        """The body, refused past its limit before it is read whole; an HTTP error status is
        the fault, with the body's first line."""
        if resp.status >= 400:
            head = await resp.content.read(4096)
            raise GenerationFault(f"{what}: HTTP {resp.status}: {first_line(head)}")
        limit = limit or (MAX_JSON_BYTES if self.answer.kind == "json" else self.answer.max_bytes)
        if (resp.content_length or 0) > limit:
            raise GenerationFault(
                f"{what}: an answer of {resp.content_length} bytes (limit {limit})"
            )
        out = bytearray()
        while block := await resp.content.read(READ_BLOCK):
            out += block
            if len(out) > limit:
                raise GenerationFault(f"{what}: an answer over {limit} bytes")
        return bytes(out)

    async def _from_json(self, data: bytes, kind: str, what: str) -> list[Image]:
        try:
            doc = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError):
            line = first_line(data)
            raise GenerationFault(f"{what}: the answer is not JSON ({kind}): {line}") from None
        if not isinstance(doc, dict):
            raise GenerationFault(
                f"{what}: the answer is JSON but not an object: {first_line(data)}"
            )
        answer = self.answer
        if answer.error is not None:
            error = lookup(doc, answer.error)
            if error not in (None, "", False):
                raise GenerationFault(f"{what}: server says: {one_line(str(error))[:500]}")
        field = answer.url or answer.path or ""
        where = lookup(doc, field)
        if not isinstance(where, str) or not where:
            raise GenerationFault(
                f"{what}: the answer has no {field!r} naming the video: {first_line(data)}"
            )
        if answer.url is not None:
            return await self._fetch(urljoin(self.url, where), what)
        local = answer.local_path(where)
        path = Path(local)
        if not path.is_file():
            mapped = f" (as {local} by [answer] path_map)" if local != where else ""
            raise GenerationFault(
                f"{what}: the answer names {where}{mapped}, which does not exist here "
                "(a filesystem we do not share? [answer] path_map, or url)"
            )
        return await self._decode(path, f"{what}: {where}")

    async def _fetch(self, url: str, what: str) -> list[Image]:
        async with self._session.get(url) as resp:
            data = await self._read(resp, f"{what}: GET {url}", self.answer.max_bytes)
        return await self._decode(data, f"{what}: {url} ({len(data)} bytes)")

    async def _decode(self, clip: bytes | Path, name: str) -> list[Image]:
        try:
            return await asyncio.to_thread(decode_clip, clip, name)
        except ClipError as exc:
            raise GenerationFault(str(exc)) from None
        except OSError as exc:
            raise GenerationFault(f"{name}: cannot read: {one_line(str(exc))}") from None

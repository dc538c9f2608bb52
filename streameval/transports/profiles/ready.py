"""Waiting for a profile's ``[ready]``: the server's answer to the session setup, before the
first key (docs/serve-formats.md#frame-rate), the same on every transport that reads one."""

from __future__ import annotations

import asyncio

from streameval.transports.profiles.model import ServerProfile


async def await_ready(
    ready: asyncio.Event, profile: ServerProfile, where: str, sent: str | None = None
) -> None:
    """Return once ``ready`` is set; ``ConnectionError`` naming what the profile waits for
    (and what the server sent instead, when known) after the profile's ``timeout_s``.
    ``where``: where the answer was awaited ("to configure", "on the data channel")."""
    spec = profile.ready
    if spec is None:
        return
    try:
        async with asyncio.timeout(spec.timeout_s):
            await ready.wait()
    except TimeoutError:
        instead = f"; the server sent {sent}" if sent else ""
        raise ConnectionError(
            f"no answer {where} within {spec.timeout_s:g} s "
            f"(profile {profile.name!r} waits for {spec.match.fields}{instead})"
        ) from None

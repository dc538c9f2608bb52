"""The one interface every source implements: live transports, in-process models and replay."""

from __future__ import annotations

from typing import Protocol

from streameval.core.events import Event


class Source(Protocol):
    """A stream of events for one episode.

    ``recv`` returns ``EpisodeStart`` first, then ``FrameEvent``/``KeySent``/``SourceError``
    events, then ``EpisodeEnd``; after that it raises ``EndOfStream``.

    ``droppable`` says whether frames may be dropped when the pipeline falls behind: a live
    transport cannot be paused (True), while replay and an in-process model simply wait
    (False, back-pressure through the bounded queue).
    """

    droppable: bool

    async def recv(self) -> Event: ...

    async def close(self) -> None: ...

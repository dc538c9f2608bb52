"""How a live session is driven and what its server said when it connected: the options
every transport, the URL dispatch and the runners pass around, below the source that uses
them (``base.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Clock = Literal["wall", "video"]


@dataclass(frozen=True, slots=True)
class LiveConfig:
    """How a live session is driven (CLI: ``--clock``, ``--seconds-per-key``, timeouts)."""

    clock: Clock = "wall"
    seconds_per_key: float = 20.0
    no_frame_timeout_s: float = 10.0
    connect_timeout_s: float = 10.0
    max_pending_frames: int = 256


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What the transport learned when it connected."""

    model: str
    fps: float
    width: int | None = None
    height: int | None = None


@dataclass(frozen=True, slots=True)
class SourceRequest:
    """What every live source is opened with, whatever its transport: where (``url``), the
    keys it drives, the episode and suite it feeds, how it is driven (``config``) and the
    rate asked with ``--fps`` (None: the server's, the profile's or measured), and the name
    results give the model (``--model-name``; None: what the server says, else its host).
    Each transport takes its own options beside it (a profile, key names, a keys URL, ...)."""

    url: str
    keys: tuple[str, ...]
    episode: str
    suite: str
    config: LiveConfig
    fps: float | None = None
    model: str | None = None


SMOKE_BELOW_S = 20.0
"""Suite value of seconds per key: anything shorter is a smoke test, and results say so."""


def live_extra(
    scheme: str, clock: str, seconds_per_key: float, fps_source: str, announced: float | None
) -> dict[str, Any]:
    """A live session's ``EpisodeInfo.extra``: what ``scores.json``'s interactivity block
    starts from (its transport, clock and key length, where its fps came from)."""
    return {
        "depth_source": "model",
        "live": True,
        "interactivity": {
            "transport": scheme,
            "clock": clock,
            "seconds_per_key": seconds_per_key,
            "smoke": seconds_per_key < SMOKE_BELOW_S,
            "fps_source": fps_source,
            "fps_announced": announced,
        },
    }

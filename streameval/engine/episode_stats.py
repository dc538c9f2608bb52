"""What one episode's reading side counts while it runs: frames received, dropped (and which,
for the recording's perception plan), rejected, errors, arrival and key-send times — the
interactivity block and the progress display are computed from these (``pipeline.py``)."""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

from streameval.core.episode.timing import ReceivedFrames, TimingCache
from streameval.core.events import ChunkDone, EpisodeInfo, ErrorEvent
from streameval.engine.track import EpisodeTrack
from streameval.metrics.interactivity import arrival_stats, key_response_latencies, latency_summary
from streameval.transports.native_gate import RECORD_KEY as RECEIVED


class EpisodeStats:
    """Counters for the interactivity block and the progress display."""

    def __init__(self) -> None:
        self.received = 0
        self.dropped = 0
        self.rejected = 0
        self.errors: list[ErrorEvent] = []
        self.t_first: float | None = None
        self.t_last: float | None = None
        self.key_times: dict[int, float] = {}
        self.step_latencies: list[float] = []
        self.recent: deque[float] = deque(maxlen=32)
        self.perceive_s = 0.0
        # wall-time interactivity (streameval/metrics/interactivity.py)
        self.arrivals: dict[int, float] = {}
        self.key_changes: list[tuple[float, str]] = []
        # chunk boundaries and the server's own statistics (chunked servers; replayed from
        # the recording's chunks.jsonl)
        self.chunks: list[ChunkDone] = []
        # frames not perceived: those the live run dropped, when replaying its recording
        self.drop: frozenset[int] = frozenset()
        self.dropped_frames: list[int] = []
        self.dropped_keys: dict[int, str] = {}  # their keys: a gap's keys are the frames' own
        # the episode as the source announced it (before perception has seen it): a cancel
        # that comes first still finalizes what was received
        self.info: EpisodeInfo | None = None
        # no key segment moved its flow channel (engine/keys_ignored.py); None: not judged
        self.keys_ignored: bool | None = None

    def interactivity(self, info: EpisodeInfo | None, track: EpisodeTrack | None) -> dict[str, Any]:
        """scores.json's ``interactivity`` block (``streameval.metrics.interactivity``)."""
        wall = (
            (self.t_last - self.t_first)
            if self.t_first is not None and self.t_last is not None
            else None
        )
        video_s = (self.received / info.fps) if info else None
        lat = sorted(self.step_latencies)
        return {
            "frames_received": self.received,
            "frames_dropped": self.dropped,
            "frames_rejected": self.rejected,
            "wall_seconds": wall,
            "video_seconds": video_s,
            "realtime_factor": (video_s / wall) if wall and video_s else None,
            "perception_ms_per_frame": (
                (1000 * self.perceive_s / self.received) if self.received else None
            ),
            "step_latency_ms_median": 1000 * lat[len(lat) // 2] if lat else None,
            "step_latency_ms_p95": 1000 * lat[min(len(lat) - 1, int(0.95 * len(lat)))]
            if lat
            else None,
            **self._wall_time(info, track),
        }

    def _wall_time(self, info: EpisodeInfo | None, track: EpisodeTrack | None) -> dict[str, Any]:
        """Arrival-time statistics and key-to-response latency, plus what a live transport
        put in ``info.extra["interactivity"]`` (clock, alignment, transport counters)."""
        if info is None or track is None:
            return {}
        n = len(track.frame_keys)
        arrivals = [self.arrivals.get(i, math.nan) for i in range(n)]
        finite = [t for t in arrivals if math.isfinite(t)]
        out: dict[str, Any] = {**arrival_stats(finite, info.fps)}
        if info.extra.get("live") and self.key_changes:
            latencies = key_response_latencies(
                [t for t, _ in self.key_changes],
                [k for _, k in self.key_changes],
                arrivals,
                np.asarray(track.sx.view(), dtype=np.float64),
                np.asarray(track.srad.view(), dtype=np.float64),
            )
            out.update(latency_summary(latencies))
        out.update(chunk_summary(self.chunks))
        if self.keys_ignored is not None:
            out["keys_ignored"] = self.keys_ignored
        out.update(info.extra.get("interactivity", {}))
        return out

    def timing(self, info: EpisodeInfo | None, frames: int) -> TimingCache | None:
        """The cache's frame arrival times and action changes (``results/cache/timing.py``),
        for a live session or the replay of one's recording (``session_kind``); None else."""
        if info is None or session_kind(info.extra) is None:
            return None
        record = info.extra.get(RECEIVED)
        return TimingCache(
            np.array([self.arrivals.get(i, math.nan) for i in range(frames)], dtype=np.float64),
            np.array([t for t, _ in self.key_changes], dtype=np.float64),
            [k for _, k in self.key_changes],
            ReceivedFrames.from_record(record) if isinstance(record, dict) else None,
        )


def session_kind(extra: dict[str, Any]) -> str | None:
    """``served`` (a network transport), ``in-process`` (a model stepped here) or None (a
    replay of a rollout no live session recorded): what the real-time metrics may judge
    (``metrics/worldatlas/realtime_scores.py``). A recording keeps it in its meta.json, so its
    replay says what the live run said."""
    recorded = extra.get("session")
    if recorded in ("served", "in-process"):
        return str(recorded)
    if not extra.get("live"):
        return None
    block = extra.get("interactivity")
    return "served" if isinstance(block, dict) and block.get("transport") else "in-process"


FPS_MISMATCH = 0.05
"""Delivered fps further than this share from the announced one is worth a warning."""


def fps_mismatch(interactivity: dict[str, Any], fps: float | None = None) -> str | None:
    """One line when the frames came at a rate more than 5 % off the fps the server announced
    (docs/serve-formats.md#frame-rate): the session's time axis is the announced one. A
    served session on the wall clock whose server announces none ran at ``fps`` (the
    profile's or the transport's); its line says so too: world-arcade's own code delivered
    4–7 fps against the keycode profile's 16 here, and its 15 s keys were called too short
    (their seconds hold a quarter of the frames the session counts)."""
    announced = interactivity.get("fps_announced")
    delivered = interactivity.get("delivered_fps")
    if not isinstance(delivered, int | float):
        return None
    if not isinstance(announced, int | float):
        wall = interactivity.get("transport") and interactivity.get("clock") == "wall"
        if not wall or interactivity.get("fps_source") == "asked" or not fps or fps <= 0:
            return None
        if abs(delivered / fps - 1.0) <= FPS_MISMATCH:
            return None
        return (
            f"the server announces no fps: the session ran at {fps:g} fps but the server "
            f"delivered {delivered:.1f} fps ({100 * (delivered / fps - 1):+.0f} %), so a "
            "key's seconds hold other frame counts than the session's; `streameval probe "
            "URL --profile P --write-profile FILE` writes the delivered rate, or give --fps"
        )
    if announced <= 0 or abs(delivered / announced - 1.0) <= FPS_MISMATCH:
        return None
    return (
        f"the server announced {announced:g} fps but delivered {delivered:.1f} fps "
        f"({100 * (delivered / announced - 1):+.0f} %): scored at the announced rate"
    )


SERVER_FIGURES = {
    "server_generation_ms": ("generation_ms", "median"),
    "server_control_latency_ms": ("control_latency_ms", "median"),
    "server_queue_depth": ("queue_depth", "max"),
    "server_dropped_frames": ("dropped_frames", "max"),
}
"""scores.json name → (the chunk statistic, how chunks combine). Queue depth: the deepest the
server's queue got; dropped frames: servers report a running count, so the largest is the
total (docs/serve-formats.md#chunks)."""


def chunk_summary(chunks: list[ChunkDone]) -> dict[str, Any]:
    """The chunk fields of the interactivity block (documented in
    docs/serve-formats.md#chunks): how many chunks, where they start, how they were found, and
    the server's own figures when it reported them (absent otherwise, never 0 for "unknown")."""
    if not chunks:
        return {"chunks": 0, "chunk_origin": None}
    sizes = sorted(c.frames for c in chunks)
    out: dict[str, Any] = {
        "chunks": len(chunks),
        "chunk_origin": chunks[0].origin,
        "chunk_frames_median": sizes[len(sizes) // 2],
        "chunk_starts": [c.start for c in chunks],
        "chunk_log": [c.to_json() for c in chunks],
    }
    for name, (stat, how) in SERVER_FIGURES.items():
        values = sorted(c.stats[stat] for c in chunks if stat in c.stats)
        if values:
            out[name] = values[len(values) // 2] if how == "median" else values[-1]
    return out

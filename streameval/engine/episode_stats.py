"""What one episode's reading side counts while it runs: frames received, dropped (and which,
for the recording's perception plan), rejected, errors, arrival and key-send times — the
interactivity block and the progress display are computed from these (``pipeline.py``)."""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

from streameval.core.events import EpisodeInfo, ErrorEvent
from streameval.engine.track import EpisodeTrack
from streameval.metrics.interactivity import arrival_stats, key_response_latencies, latency_summary


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
        # frames not perceived: those the live run dropped, when replaying its recording
        self.drop: frozenset[int] = frozenset()
        self.dropped_frames: list[int] = []
        self.dropped_keys: dict[int, str] = {}  # their keys: a gap's keys are the frames' own

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
        out.update(info.extra.get("interactivity", {}))
        return out

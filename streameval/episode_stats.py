"""What one episode's reading side counts while it runs: frames received, dropped (and which,
for the recording's perception plan), rejected, errors, arrival and key-send times — the
interactivity block and the progress display are computed from these (``pipeline.py``)."""

from __future__ import annotations

from collections import deque

from streameval.events import ErrorEvent


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
        # wall-time interactivity (streameval/interactivity.py)
        self.arrivals: dict[int, float] = {}
        self.key_changes: list[tuple[float, str]] = []
        # frames not perceived: those the live run dropped, when replaying its recording
        self.drop: frozenset[int] = frozenset()
        self.dropped_frames: list[int] = []
        self.dropped_keys: dict[int, str] = {}  # their keys: a gap's keys are the frames' own

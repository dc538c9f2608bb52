"""Records a live episode as a replayable rollout directory (DESIGN §5 ``recording/``).

Hooked in before perception (``on_frame``), so every frame received is kept even when the
perceiver falls behind or rejects it. A recorder failure (disk full, a frame whose size
changes) stops the recording, is reported through the other observers' ``on_error`` (the
dashboard's event log, the console printer; stderr only when there is nobody else), is kept
in ``errors`` and (once the recording has started) in its meta.json, and never stops the
evaluation.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from streameval.events import EpisodeInfo, FrameEvent, KeySent
from streameval.observers import EpisodeObserver, EpisodeOutcome
from streameval.replay.recorder import Recorder


class RecordingObserver(EpisodeObserver):
    def __init__(self, out_dir: Path, *, lossy: bool = False) -> None:
        self.out_dir = out_dir
        self.lossy = lossy
        self.recorder: Recorder | None = None
        self.errors: list[str] = []
        self._peers: list[EpisodeObserver] = []

    def bind(self, peers: Sequence[EpisodeObserver]) -> None:
        self._peers = [p for p in peers if p is not self]

    def _fail(self, exc: Exception) -> None:
        message = f"recording stopped: {exc}"
        self.errors.append(message)
        if self._peers:
            for peer in self._peers:
                peer.on_error(message)
        else:
            print(f"  ! {message}", file=sys.stderr)
        if self.recorder is not None:
            try:
                self.recorder.close(False, message)
            except Exception as close_exc:  # already failing; keep the first error
                self.errors.append(f"recording close failed: {close_exc}")
        self.recorder = None

    def on_start(self, info: EpisodeInfo) -> None:
        try:
            self.recorder = Recorder.for_episode(self.out_dir, info, lossy=self.lossy)
        except Exception as exc:
            self._fail(exc)

    def on_frame(self, event: FrameEvent) -> None:
        if self.recorder is None:
            return
        try:
            self.recorder.add_frame(event)
        except Exception as exc:
            self._fail(exc)

    def on_key(self, event: KeySent) -> None:
        if self.recorder is None:
            return
        try:
            self.recorder.add_key(event)
        except Exception as exc:
            self._fail(exc)

    def on_end(self, outcome: EpisodeOutcome) -> None:
        if self.recorder is None:
            return
        try:
            self.recorder.close(outcome.complete, None if outcome.complete else "incomplete")
        except Exception as exc:
            self._fail(exc)
        self.recorder = None

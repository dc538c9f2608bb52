"""Records a live episode as a replayable rollout directory (docs/cli.md#rollout-directory,
``recording/``).

Hooked in before perception (``on_frame``), so every frame received is kept even when the
perceiver falls behind or rejects it. A recorder failure (disk full, a frame whose size
changes) stops the recording and becomes an ``ErrorEvent`` on the episode's error channel
(``bind``): every observer hears it (the dashboard's event log, the console printer) and it is
written to scores.json's ``errors``; stderr only when unbound. It is also kept in ``errors``
and (once the recording has started) in the recording's meta.json, and never stops the
evaluation.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streameval.cases.episode import case_record_of
from streameval.core.events import ChunkDone, EpisodeInfo, ErrorEvent, FrameEvent, KeySent
from streameval.core.observers import EpisodeObserver, EpisodeOutcome
from streameval.engine.episode_stats import session_kind
from streameval.replay.recorder import Recorder
from streameval.transports.native_gate import RECORD_KEY as RECEIVED


class RecordingObserver(EpisodeObserver):
    def __init__(self, out_dir: Path, *, lossy: bool = False) -> None:
        self.out_dir = out_dir
        self.lossy = lossy
        self.recorder: Recorder | None = None
        self.errors: list[str] = []
        self._report: Callable[[ErrorEvent], None] | None = None
        self._extra: dict[str, Any] = {}  # the episode's extra: what the source adds at its end

    def bind(self, report: Callable[[ErrorEvent], None]) -> None:
        self._report = report

    def _fail(self, exc: Exception) -> None:
        message = f"recording stopped: {exc}"
        self.errors.append(message)
        if self._report is not None:
            self._report(ErrorEvent(message, source="recorder"))
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
            # the session kind travels with the recording: its replay is judged as this run
            # (engine/episode_stats.session_kind, the real-time metrics)
            self._extra = info.extra
            extra: dict[str, Any] = {"session": session_kind(info.extra)}
            case = case_record_of(info.extra)
            if case is not None:  # a replay of the recording runs the same case
                extra["case"] = case
            self.recorder = Recorder.for_episode(self.out_dir, info, lossy=self.lossy, extra=extra)
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

    def on_chunk(self, event: ChunkDone) -> None:
        if self.recorder is None:
            return
        try:
            self.recorder.add_chunk(event)
        except Exception as exc:
            self._fail(exc)

    def on_end(self, outcome: EpisodeOutcome) -> None:
        if self.recorder is None:
            return
        extra: dict[str, Any] = {}
        if outcome.case is not None:  # the live verdict: a replay has the frames, not the image
            extra["conditioning"] = outcome.conditioning
        if RECEIVED in self._extra:  # every received frame's class: the replay reports them
            extra[RECEIVED] = self._extra[RECEIVED]
        try:
            self.recorder.close(
                outcome.complete,
                None if outcome.complete else "incomplete",
                perception=outcome.perception or None,
                extra=extra or None,
            )
        except Exception as exc:
            self._fail(exc)
        self.recorder = None

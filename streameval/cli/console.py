"""Plain progress output for terminals without the dashboard and for scripts (``--no-tui``)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from streameval.core.events import EpisodeInfo, ErrorEvent
from streameval.core.metric_result import MetricResult
from streameval.core.observers import EpisodeObserver, EpisodeOutcome, Progress


def format_metric(m: MetricResult) -> str:
    if m.status == "official" and m.normalized is not None:
        return f"{m.normalized:6.2f}"
    if m.status == "official" and m.raw is not None:  # a statistic in its own unit
        return f"{m.raw:.4g} {m.details.get('unit', '')}".rstrip()
    return m.status


class ProgressPrinter(EpisodeObserver):
    """One status line every ``every_s`` wall seconds, a score table at episode end."""

    def __init__(self, stream: TextIO | None = None, every_s: float = 2.0) -> None:
        self.stream = stream or sys.stdout
        self.every_s = every_s
        self._last = 0.0
        self._provisional: dict[str, MetricResult] | None = None

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def on_start(self, info: EpisodeInfo) -> None:
        keys = "".join(info.schedule.keys)
        self._print(
            f"▶ {info.episode}  model={info.model}  suite={info.suite}  keys={keys}  "
            f"fps={info.fps:g}  frames={info.schedule.total_frames}"
        )
        self._last = time.perf_counter()

    def on_progress(self, progress: Progress) -> None:
        if progress.provisional is not None:
            self._provisional = progress.provisional
        now = time.perf_counter()
        if now - self._last < self.every_s:
            return
        self._last = now
        total = progress.frames_total or 0
        acc = ""
        if self._provisional:
            acc = "  provisional: " + " ".join(
                f"{name.replace('direction_accuracy', 'acc')}={format_metric(m).strip()}"
                for name, m in self._provisional.items()
                if name.startswith("direction_accuracy")
            )
        self._print(
            f"  frame {progress.frames_done}/{total}  key {progress.key}  "
            f"{progress.fps:6.1f} fps  queue {progress.queue_depth}  "
            f"dropped {progress.dropped}{acc}"
        )

    def on_error(self, error: ErrorEvent) -> None:
        self._print(f"  ! {error.message}")

    def on_end(self, outcome: EpisodeOutcome) -> None:
        state = "complete" if outcome.complete else "INCOMPLETE"
        rt = outcome.interactivity.get("realtime_factor")
        rt_text = f", {rt:.1f}× real time" if isinstance(rt, float) else ""
        self._print(f"■ {outcome.info.episode}: {outcome.frames} frames, {state}{rt_text}")
        for name, m in outcome.scores.metrics.items():
            reason = f"  ({m.reason})" if m.reason else ""
            self._print(f"    {name:<26} {format_metric(m)}{reason}")
        if outcome.results_dir is not None:
            self._print(f"    → {outcome.results_dir / 'scores.json'}")

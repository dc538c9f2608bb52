"""Console output of a run without the dashboard (``--no-tui``): plain progress lines for
scripts and logs (``ProgressPrinter``), and progress bars in a terminal (``ProgressBars``:
episode i/N, frames of the running episode, throughput and ETA).

The per-episode lines of ``ProgressPrinter`` (start, score table, errors) still print above
the bars (rich redirects stdout while the bars are live); only its periodic status line is
replaced by the bars. Piped or logged output keeps the plain lines: bars there are noise.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress

from streameval.core.events import EpisodeInfo, ErrorEvent
from streameval.core.metric_result import MetricResult
from streameval.core.observers import EpisodeObserver, EpisodeOutcome, Progress
from streameval.results.scores_file import SCORES_FILE


def format_metric(m: MetricResult, name: str | None = None) -> str:
    """The value as the table shows it: 2 decimals on WorldMark's 0–100, 4 on WorldAtlas's
    [0, 1] (``MetricSpec.decimals``; 2 when ``name`` is not given or not registered)."""
    if m.status == "official" and m.normalized is not None:
        from streameval.leaderboard.columns import metric_scale

        decimals = metric_scale(name)[1] if name is not None else 2
        return f"{m.normalized:6.{decimals}f}"
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
                f"{name.replace('direction_accuracy', 'acc')}={format_metric(m, name).strip()}"
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

    def on_warning(self, message: str) -> None:
        self._print(f"  ! warning: {message}")

    def on_end(self, outcome: EpisodeOutcome) -> None:
        state = "complete" if outcome.complete else "INCOMPLETE"
        rt = outcome.interactivity.get("realtime_factor")
        rt_text = f", {rt:.1f}× real time" if isinstance(rt, float) else ""
        self._print(f"■ {outcome.info.episode}: {outcome.frames} frames, {state}{rt_text}")
        for name, m in outcome.scores.metrics.items():
            reason = f"  ({m.reason})" if m.reason else ""
            self._print(f"    {name:<26} {format_metric(m, name)}{reason}")
        if outcome.results_dir is not None:
            self._print(f"    → {outcome.results_dir / SCORES_FILE}")


class ProgressBars(ProgressPrinter):
    """Use as a context manager around the run; an observer of every episode."""

    def __init__(self, n_episodes: int, console: Console | None = None) -> None:
        self.bars = RichProgress(
            TextColumn("{task.description:<24}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
        )
        super().__init__()  # its lines go through _print, to the bars' console
        self.episodes: TaskID = self.bars.add_task("episodes", total=n_episodes, rate="")
        self.frames: TaskID | None = None

    def __enter__(self) -> ProgressBars:
        self.bars.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.bars.stop()

    def _print(self, text: str) -> None:
        self.bars.console.print(text, markup=False, highlight=False)

    def on_start(self, info: EpisodeInfo) -> None:
        super().on_start(info)
        if self.frames is not None:
            self.bars.remove_task(self.frames)
        self.frames = self.bars.add_task(
            info.episode, total=info.schedule.total_frames or None, rate=""
        )

    def on_progress(self, progress: Progress) -> None:
        if self.frames is None:
            return
        self.bars.update(
            self.frames,
            completed=progress.frames_done,
            total=progress.frames_total or None,
            rate=f"{progress.fps:5.1f} fps",
        )

    def on_end(self, outcome: EpisodeOutcome) -> None:
        if self.frames is not None:
            self.bars.update(self.frames, completed=outcome.frames)
        self.bars.advance(self.episodes)
        super().on_end(outcome)

"""Progress bars for long ``--no-tui`` runs in a terminal (rich): episode i/N, frames of the
running episode, throughput and ETA.

The per-episode lines of ``ProgressPrinter`` (start, score table, errors) still print, above
the bars (rich redirects stdout while the bars are live); only its periodic status line is
replaced by the bars. Piped or logged output keeps the plain lines: bars there are noise.
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from streameval.cli.console import ProgressPrinter
from streameval.core.events import EpisodeInfo
from streameval.core.observers import EpisodeOutcome
from streameval.core.observers import Progress as FrameProgress


class ProgressBars(ProgressPrinter):
    """Use as a context manager around the run; an observer of every episode."""

    def __init__(self, n_episodes: int, console: Console | None = None) -> None:
        self.bars = Progress(
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

    def on_progress(self, progress: FrameProgress) -> None:
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

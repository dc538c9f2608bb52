"""The live screen: the selected episode as it is evaluated, and the list of all episodes.

The screen owns no data: it paints the App's ``DashboardModel`` when told that a job changed
(``episode_changed``) and once a second for the clock-driven parts ("last frame … ago").

Progress repaints are rate-limited (``repaint_interval_s``, 5 a second by default): on the
two cores a replay uses, every millisecond the event loop spends laying out text is taken from
decoding and flow, and a human reads no faster. The throughput numbers follow the once-a-second
tick. Control events (start, error, end) repaint everything at once. The limit decides only
*when* the model is painted, never *what*: the last state is always painted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from streameval.tui.state import DashboardModel, EpisodeState, LogLine
from streameval.tui.widgets.control_metrics import ControlMetrics
from streameval.tui.widgets.episode_header import EpisodeHeader
from streameval.tui.widgets.episode_list import EpisodeList, job_of
from streameval.tui.widgets.event_log import EventLog
from streameval.tui.widgets.final_metrics import FinalMetrics
from streameval.tui.widgets.schedule_bar import ScheduleBar
from streameval.tui.widgets.signal_plot import SignalPlot
from streameval.tui.widgets.status_line import StatusLine
from streameval.tui.widgets.throughput import Throughput
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, OptionList

# Below this many rows the live screen drops margins and the side bar's throughput panel and,
# once the shown episode has ended, its signal plots (dashboard.tcss: .compact).
COMPACT_BELOW_ROWS = 36


class LiveScreen(Screen[None]):
    """Episode list and throughput on the left; the selected episode on the right."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "follow", "Follow running"),
        Binding("right_square_bracket", "next_episode", "Next ep."),
        Binding("left_square_bracket", "previous_episode", "Prev. ep."),
    ]

    def __init__(
        self,
        model: DashboardModel,
        queue_size: int,
        clock: Callable[[], float],
        repaint_interval_s: float = 0.2,
    ) -> None:
        super().__init__(id="live")
        self.model = model
        self.queue_size = queue_size
        self.clock = clock
        self.repaint_interval_s = repaint_interval_s
        self._dirty: set[int] = set()
        self._flush_timer: Timer | None = None
        self._last_flush = 0.0

    def compose(self) -> ComposeResult:
        with Horizontal(id="live-body"):
            with Vertical(id="live-side"):
                yield EpisodeList(id="episodes")
                yield Throughput(id="throughput")
            with Vertical(id="live-main"):
                yield EpisodeHeader(id="episode-header")
                yield ScheduleBar(id="schedule")
                yield SignalPlot("sx", id="plot-sx")
                yield SignalPlot("srad", id="plot-srad")
                yield ControlMetrics(id="control")
                yield FinalMetrics(id="final")
        yield EventLog(id="events")
        yield StatusLine(id="status")
        yield Footer()

    def on_mount(self) -> None:
        log = self.query_one(EventLog)
        for line in self.model.log:
            log.add(line)
        self.repaint_all()
        self.set_interval(1.0, self.tick)

    # -- what the App calls --------------------------------------------------------------

    def episode_changed(self, job: int, *, urgent: bool = False) -> None:
        """Job ``job`` changed: repaint its list entry, the status and, if shown, the episode;
        now if ``urgent``, else within ``repaint_interval_s``."""
        self._dirty.add(job)
        if not self.is_mounted:
            return
        if urgent:
            self._flush(urgent=True)
        elif self._flush_timer is None:
            wait = self._last_flush + self.repaint_interval_s - time.monotonic()
            # Never 0: Textual's Timer divides by its interval.
            self._flush_timer = self.set_timer(max(0.001, wait), self._flush)

    def _flush(self, urgent: bool = False) -> None:
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        self._last_flush = time.monotonic()
        if not self.is_current:
            return  # another screen is shown: paint everything when this one comes back
        dirty, self._dirty = self._dirty, set()
        self.query_one(EpisodeList).show(self.model.episodes, self.model.selected)
        self.query_one(StatusLine).show(self.model)
        if self.model.selected in dirty:
            # Throughput numbers follow the clock tick (once a second): fps and queue depth
            # change every frame and are unreadable faster; control events repaint them.
            self.repaint_episode(throughput=urgent)

    def on_screen_resume(self) -> None:
        self.repaint_all()

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.height < COMPACT_BELOW_ROWS, "compact")

    def add_log(self, line: LogLine) -> None:
        if self.is_mounted:
            self.query_one(EventLog).add(line)

    def repaint_all(self) -> None:
        self._dirty.clear()
        self.query_one(EpisodeList).show(self.model.episodes, self.model.selected)
        self.query_one(StatusLine).show(self.model)
        self.repaint_episode()

    def tick(self) -> None:
        """Once a second: the parts that move with the clock even when no frame arrives."""
        if not self.is_current:
            return
        self.query_one(StatusLine).show(self.model)
        self._repaint_throughput(self.model.selected_episode)

    # -- painting -------------------------------------------------------------------------

    def repaint_episode(self, *, throughput: bool = True) -> None:
        ep = self.model.selected_episode
        self.query_one(EpisodeHeader).show(ep)
        info = ep.info if ep is not None else None
        progress = ep.progress if ep is not None else None
        self.query_one(ScheduleBar).show(
            info.schedule if info is not None else None,
            progress.frames_done if progress is not None else 0,
        )
        key = progress.key if progress is not None else None
        total = progress.frames_total if progress is not None else None
        trace = ep.trace if ep is not None else None
        for plot, values in (
            (self.query_one("#plot-sx", SignalPlot), trace.sx if trace else ()),
            (self.query_one("#plot-srad", SignalPlot), trace.srad if trace else ()),
        ):
            plot.show(values, trace.keys if trace else (), total, key)
        # A short terminal (80×24) cannot hold the plots and both score panels: once the
        # shown episode has ended its scores matter more than its signals.
        self.set_class(ep is not None and ep.outcome is not None, "ended")
        if ep is not None and ep.outcome is not None:
            scores = ep.outcome.scores.metrics
            self.query_one(ControlMetrics).show(scores, final=True, complete=ep.outcome.complete)
        else:
            provisional = ep.trace.provisional if ep is not None else None
            self.query_one(ControlMetrics).show(provisional, final=False, complete=False)
        self.query_one(FinalMetrics).show(ep.outcome if ep is not None else None)
        if throughput:
            self._repaint_throughput(ep)

    def _repaint_throughput(self, ep: EpisodeState | None) -> None:
        since = None
        if ep is not None and ep.last_frame_at is not None:
            since = max(0.0, self.clock() - ep.last_frame_at)
        self.query_one(Throughput).show(
            ep.progress if ep is not None else None,
            ep.trace.frames_received if ep is not None else 0,
            self.queue_size,
            since,
            final=ep is not None and ep.final,
        )

    # -- user actions ---------------------------------------------------------------------

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        job = job_of(event.option)
        if job is None or job == self.model.selected:
            return
        self.model.select(job)
        self.repaint_all()

    def action_follow(self) -> None:
        self.model.follow = True
        if self.model.running is not None:
            self.model.selected = self.model.running
        self.repaint_all()

    def _step(self, delta: int) -> None:
        n = len(self.model.episodes)
        if n:
            self.model.select((self.model.selected + delta) % n)
            self.repaint_all()

    def action_next_episode(self) -> None:
        self._step(1)

    def action_previous_episode(self) -> None:
        self._step(-1)

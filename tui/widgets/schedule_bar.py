"""The schedule as a progress bar: one span per key, boundaries marked, perceived part lit.

Column ``c`` of the bar covers frames ``[c·T/W, (c+1)·T/W)`` — the same mapping the signal
plots use, so a sparkline bar sits right under the part of the schedule it belongs to.
"""

from __future__ import annotations

import math

from rich.console import RenderableType
from rich.text import Text
from streameval.protocol.keys import FAMILY
from streameval.protocol.schedule import Schedule
from streameval.tui.widgets.runs import text_from_cells
from textual.widget import Widget

# Green and red are kept for obey / disobey (the signal plots), so families get other hues.
FAMILY_COLOURS: dict[str, str] = {"fwd": "#5fafff", "lat": "#af87ff", "yaw": "#ffaf5f"}
NO_KEY_COLOUR = "grey50"


def key_colour(key: str) -> str:
    """A colour per key family, shared by the bar and the episode header."""
    family = FAMILY.get(key)
    return FAMILY_COLOURS[family] if family is not None else NO_KEY_COLOUR


def boundary_columns(schedule: Schedule, width: int) -> set[int]:
    """The bar columns where a segment starts (the first segment's start is not marked)."""
    total = schedule.total_frames
    if total <= 0 or width <= 0:
        return set()
    return {
        min(width - 1, round(b * width / total)) for b in schedule.boundaries[1:-1] if 0 < b < total
    }


def render_schedule(schedule: Schedule, frames_done: int, width: int) -> Text:
    """Two lines: the key of each segment above its span, then the bar."""
    total = schedule.total_frames
    width = max(1, width)
    segments = schedule.segments()
    current = schedule.segment_index(max(0, frames_done - 1)) if frames_done else 0
    labels = [" "] * width
    label_styles = [""] * width
    for j, seg in enumerate(segments):
        col = min(width - 1, round(seg.start * width / total)) if total else 0
        # The letter sits one column after a boundary mark, never on top of it.
        col = min(width - 1, col + (1 if j > 0 else 0))
        if labels[col] == " ":
            labels[col] = seg.key
            style = f"bold {key_colour(seg.key)}"
            label_styles[col] = f"{style} reverse" if j == current and frames_done else style
    marks = boundary_columns(schedule, width)
    bar: list[tuple[str, str]] = []
    for col in range(width):
        frame = (col + 0.5) * total / width if total else 0.0
        seg = segments[schedule.segment_index(int(frame))]
        if col in marks:
            bar.append(("┃", "bold white" if frame < frames_done else "grey62"))
        elif frame < frames_done:
            bar.append(("━", key_colour(seg.key)))
        else:
            bar.append(("━", "grey23"))
    return Text("\n").join(
        [text_from_cells(zip(labels, label_styles, strict=True)), text_from_cells(bar)]
    )


def lit_columns(schedule: Schedule, frames_done: int, width: int) -> int:
    """How many bar columns are lit: the bar changes only when this does."""
    total = schedule.total_frames
    if total <= 0:
        return 0
    # Column c is lit when its centre frame (c + 0.5)·T/W is below frames_done.
    return max(0, min(width, math.ceil(frames_done * width / total - 0.5)))


class ScheduleBar(Widget):
    """Where the episode stands in its key schedule."""

    DEFAULT_CSS = """
    ScheduleBar { height: 2; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.schedule: Schedule | None = None
        self.frames_done = 0

    def show(self, schedule: Schedule | None, frames_done: int) -> None:
        width = self.content_size.width
        if schedule is self.schedule and schedule is not None:
            before = lit_columns(schedule, self.frames_done, width)
            after = lit_columns(schedule, frames_done, width)
            current = schedule.segment_index(max(0, frames_done - 1))
            previous = schedule.segment_index(max(0, self.frames_done - 1))
            if (
                before == after
                and current == previous
                and (frames_done > 0) == (self.frames_done > 0)
            ):
                self.frames_done = frames_done
                return
        self.schedule, self.frames_done = schedule, frames_done
        self.refresh()

    def render(self) -> RenderableType:
        if self.schedule is None:
            return Text("waiting for the episode to start…", style="dim")
        return render_schedule(self.schedule, self.frames_done, self.content_size.width)

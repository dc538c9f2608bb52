"""Errors and warnings of every episode, as they happen (never only at the end)."""

from __future__ import annotations

from rich.text import Text
from streameval.tui.state import LogLevel, LogLine
from textual.widgets import RichLog

_MARKS: dict[LogLevel, tuple[str, str]] = {
    LogLevel.INFO: ("·", "dim"),
    LogLevel.WARNING: ("▲", "yellow"),
    LogLevel.ERROR: ("✖", "bold red"),
}


def log_text(line: LogLine) -> Text:
    mark, style = _MARKS[line.level]
    text = Text(f"{mark} ", style=style)
    text.append(line.text, style="" if line.level is LogLevel.INFO else style)
    return text


class EventLog(RichLog):
    """Append-only log; lines are written once, when they are logged."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, wrap=True, markup=False, auto_scroll=True)

    def on_mount(self) -> None:
        self.border_title = "Events"

    def add(self, line: LogLine) -> None:
        # Wrap at the log's own width: RichLog otherwise measures against the console's,
        # which in a headless App (tests, screenshots) is 80 columns whatever the screen.
        width = self.scrollable_content_region.width
        self.write(log_text(line), width=width if width > 0 else None)

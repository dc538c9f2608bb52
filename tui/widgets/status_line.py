"""One line saying what the whole command is doing: running k/N, finalizing, or done.

In a case run it also says the case set's progress: cases ended and left, about how long the
rest takes (the case-set view, ``c``, has the details)."""

from __future__ import annotations

from rich.text import Text
from streameval.tui.state import DashboardModel, JobStatus
from textual.widgets import Static


def status_text(model: DashboardModel) -> Text:
    counts = model.counts()
    n = len(model.episodes)
    text = Text()
    if model.failure is not None:
        text.append("pipeline failed: ", style="bold red")
        text.append(model.failure)
        text.append(" — press q", style="bold")
        return text
    if model.stopping and not model.finished:
        text.append(
            "stopping — finalizing the episode in progress (marked incomplete)…",
            style="bold yellow",
        )
        return text
    if model.finished:
        text.append("done", style="bold green")
        parts = [
            f"{counts[s]} {s.value}"
            for s in (JobStatus.DONE, JobStatus.INCOMPLETE, JobStatus.BAD_INPUT, JobStatus.SKIPPED)
            if counts[s]
        ]
        if parts:
            text.append(" (" + ", ".join(parts) + ")")
        text.append(" — press q", style="bold")
        return text
    finished = counts[JobStatus.DONE] + counts[JobStatus.INCOMPLETE] + counts[JobStatus.BAD_INPUT]
    if model.running is not None:
        ep = model.episodes[model.running]
        text.append("running ", style="bold cyan")
        text.append(f"{ep.title} ({model.running + 1}/{n})")
    else:
        waiting = "starting…" if finished == 0 else "next episode…"
        text.append(waiting if finished < n else "finishing…", style="bold cyan")
    text.append(f" · {finished}/{n} finished", style="dim")
    progress = model.case_progress()
    if progress is not None:
        text.append(f" · {progress.summary()} (c)", style="dim")
    if not model.follow:
        text.append(" · not following (f)", style="dim")
    return text


class StatusLine(Static):
    """The command's state; repainted only when its text changes."""

    _text: Text | None = None

    def show(self, model: DashboardModel) -> None:
        text = status_text(model)
        if text == self._text:
            return  # unchanged: no repaint
        self._text = text
        self.update(text, layout=False)  # fixed size (CSS): no re-layout

"""The command's episodes, one line each, to switch the live view between them.

Each line: a status mark, the episode name and what it is doing (percent done, a final score,
"incomplete", "bad input"...). Moving the highlight (arrows, a click) posts ``OptionHighlighted``;
the live screen turns that into a selection in the model. When the model moves the highlight
itself (following the running episode) no message is posted.
"""

from __future__ import annotations

from rich.text import Text
from streameval.tui.format import metric_value_text, percent
from streameval.tui.state import EpisodeState, JobStatus
from textual.widgets import OptionList
from textual.widgets.option_list import Option

_MARKS: dict[JobStatus, tuple[str, str]] = {
    JobStatus.QUEUED: ("…", "dim"),
    JobStatus.RUNNING: ("▶", "bold cyan"),
    JobStatus.DONE: ("✓", "green"),
    JobStatus.INCOMPLETE: ("◼", "yellow"),
    JobStatus.BAD_INPUT: ("✖", "red"),
    JobStatus.SKIPPED: ("–", "dim"),
}


def entry_text(ep: EpisodeState) -> Text:
    mark, style = _MARKS[ep.status]
    text = Text(f"{mark} ", style=style)
    text.append(ep.title, style="bold" if ep.status is JobStatus.RUNNING else "")
    if ep.status is JobStatus.RUNNING:
        detail = percent(ep.fraction_done)
    elif ep.status is JobStatus.DONE and ep.outcome is not None:
        acc = ep.outcome.scores.metrics.get("direction_accuracy_trans")
        if acc is None or acc.status != "official":
            acc = ep.outcome.scores.metrics.get("direction_accuracy_rot")
        detail = f"acc {metric_value_text(acc)}" if acc is not None else "done"
    else:
        detail = ep.status.value
    text.append(f"  {detail}", style="dim")
    return text


def option_id(job: int) -> str:
    return f"job-{job}"


def job_of(option: Option) -> int | None:
    """The job index of an option of this list (None for a foreign option)."""
    oid = option.id or ""
    return int(oid.removeprefix("job-")) if oid.startswith("job-") else None


class EpisodeList(OptionList):
    """One option per job; prompts are replaced only when their text changes."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._texts: list[str] = []

    def on_mount(self) -> None:
        self.border_title = "Episodes"

    def show(self, episodes: list[EpisodeState], selected: int) -> None:
        texts = [entry_text(ep) for ep in episodes]
        if len(texts) != len(self._texts):
            self.set_options(Option(t, id=option_id(i)) for i, t in enumerate(texts))
        else:
            for i, t in enumerate(texts):
                if t.plain != self._texts[i]:
                    self.replace_option_prompt_at_index(i, t)
        self._texts = [t.plain for t in texts]
        if episodes and self.highlighted != selected:
            # Following the model is not a user's choice: no OptionHighlighted for it, or the
            # screen would take it back as a selection (and stale ones would ping-pong).
            with self.prevent(OptionList.OptionHighlighted):
                self.highlighted = selected

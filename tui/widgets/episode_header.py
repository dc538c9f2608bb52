"""Who is being evaluated and what the model is being asked to do right now.

Two lines: model · suite · episode · source, then the current key (the key that conditioned the
latest perceived frame), what it means, what it should do to the flow, which segment of the
schedule it is, and the frame count.
"""

from __future__ import annotations

from rich.text import Text
from streameval.tui.format import KEY_NAMES, expectation, percent
from streameval.tui.state import EpisodeState, JobStatus
from streameval.tui.widgets.schedule_bar import key_colour
from textual.widgets import Static


def header_text(ep: EpisodeState | None) -> Text:
    text = Text()
    if ep is None:
        return Text("no episode", style="dim")
    info = ep.info
    if info is None:
        text.append(ep.name, style="bold")
        text.append(f"  {ep.status.value}", style="dim")
        if ep.status is JobStatus.BAD_INPUT and ep.errors:
            text.append("\n")
            text.append(ep.errors[-1], style="red")
        return text
    text.append("model ", style="dim")
    text.append(info.model, style="bold")
    text.append("  suite ", style="dim")
    text.append(info.suite)
    text.append("  episode ", style="dim")
    text.append(info.episode, style="bold")
    text.append(f"  {info.fps:g} fps", style="dim")
    text.append("\n")
    progress = ep.progress
    key = progress.key if progress is not None else None
    if key is None:
        text.append("key ", style="dim")
        text.append(" · ", style="dim")
        text.append("  waiting for the first frame…", style="dim")
        return text
    schedule = info.schedule
    j = schedule.segment_index(max(0, (progress.frames_done if progress else 1) - 1))
    text.append("key ", style="dim")
    text.append(f" {key} ", style=f"bold reverse {key_colour(key)}")
    text.append(f" {KEY_NAMES.get(key, key)}", style="bold")
    text.append(f"  expects {expectation(key)}")
    text.append(f"   segment {j + 1}/{len(schedule.keys)}", style="dim")
    if progress is not None:
        total = progress.frames_total
        total_text = str(total) if total else "?"
        text.append(
            f"   frame {progress.frames_done}/{total_text} ({percent(ep.fraction_done)})",
            style="dim",
        )
    return text


class EpisodeHeader(Static):
    """Model, suite, episode and the current key of the selected episode."""

    _text: Text | None = None

    def show(self, ep: EpisodeState | None) -> None:
        text = header_text(ep)
        if text == self._text:
            return  # unchanged: no repaint
        self._text = text
        self.update(text, layout=False)  # fixed size (CSS): no re-layout

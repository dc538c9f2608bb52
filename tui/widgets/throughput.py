"""Throughput of the selected episode: perceived fps, queue depth, drops, freshness.

A served stream's "not native" row counts the repeated and interpolated frames it received
(docs/methods.md#native-frames), yellow past the warning's share. "last frame … ago" comes
from the dashboard's clock (injectable, fixed in snapshot tests): it is what tells a stalled
model from a frozen screen.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from streameval.core.observers import Progress
from streameval.metrics.runtime import NON_NATIVE_WARN
from streameval.transports.native_gate import LIVE_KEY

STALE_AFTER_S = 5.0  # no frame for this long: the freshness line turns yellow


def throughput_text(
    progress: Progress | None,
    received: int,
    queue_size: int,
    since_last_frame: float | None,
    final: bool,
    width: int,
) -> Text:
    """Label left, value right, one line each (plain text: repainted several times a second)."""
    rows: list[tuple[str, str, str]] = []  # label, value, value style
    if progress is None:
        rows += [("fps", "—", "dim"), ("queue", "—", "dim"), ("dropped", "—", "dim")]
    else:
        full = bool(queue_size) and progress.queue_depth >= queue_size
        rows += [
            ("fps", f"{progress.fps:.1f}", ""),
            ("queue", f"{progress.queue_depth}/{queue_size}", "yellow" if full else ""),
            ("dropped", str(progress.dropped), "bold red" if progress.dropped else ""),
        ]
    rows.append(("received", str(received), ""))
    counts = progress.info.extra.get(LIVE_KEY) if progress is not None else None
    if isinstance(counts, list) and len(counts) == 3 and sum(counts):
        padded = counts[1] + counts[2]  # a served stream's repeats and blends: not counted
        share = padded / sum(counts)
        rows.append(("not native", str(padded), "bold yellow" if share > NON_NATIVE_WARN else ""))
    if progress is not None and not final and since_last_frame is not None:
        stale = since_last_frame > STALE_AFTER_S
        rows.append(
            ("last frame", f"{since_last_frame:.1f} s ago", "bold yellow" if stale else "dim")
        )
    text = Text()
    for i, (label, value, style) in enumerate(rows):
        if i:
            text.append("\n")
        text.append(label)
        text.append(value.rjust(max(1, width - len(label))), style=style or None)
    return text


class Throughput(Static):
    """fps · queue · dropped · received · last frame."""

    _shown: tuple[object, ...] | None = None

    def on_mount(self) -> None:
        self.border_title = "Throughput"

    def show(
        self,
        progress: Progress | None,
        received: int,
        queue_size: int,
        since_last_frame: float | None,
        final: bool,
    ) -> None:
        width = self.content_size.width
        key = (progress, received, queue_size, since_last_frame, final, width)
        if key == self._shown:
            return
        self._shown = key
        text = throughput_text(progress, received, queue_size, since_last_frame, final, width)
        self.update(text, layout=False)  # fixed size (CSS): no re-layout

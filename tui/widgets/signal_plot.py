"""A signed sparkline of one flow signal (Sx or Srad) over the episode, coloured by whether
each bar has the sign the key expects.

The x axis is the schedule (column ``c`` = frames ``[c·T/W, (c+1)·T/W)``, like the schedule
bar above it), so a segment where the model disobeys shows up as a red stretch under its key.
Bars grow up from a zero axis for positive values and down for negative ones; green = the sign
the key expects for this channel, red = the opposite sign, grey = the key does not drive this
channel (Sx under W, for instance) or no key. Missing samples (NaN) leave a gap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from rich.console import RenderableType
from rich.text import Text
from streameval.protocol.keys import FAMILY, channel_of, expected_sign
from streameval.tui.format import CHANNEL_LABELS, expectation, signed
from streameval.tui.widgets.runs import text_from_cells
from textual.widget import Widget

Channel = Literal["sx", "srad"]
_UP = " ▁▂▃▄▅▆▇█"  # _UP[k]: the lower k eighths of a cell filled
OBEY, DISOBEY, NEUTRAL = "green", "red", "grey50"


def bar_style(channel: Channel, key: str, value: float) -> str:
    """Green if ``value`` has the sign ``key`` expects on ``channel``, red if not, grey if the
    key does not drive this channel."""
    if key not in FAMILY or channel_of(key) != channel:
        return NEUTRAL
    return OBEY if value * expected_sign(key) > 0 else DISOBEY


def bin_samples(
    values: Sequence[float], keys: Sequence[str], width: int, total: int | None
) -> list[tuple[float, str] | None]:
    """One (mean value, key) per column; None where the column has no finite sample.

    With a known ``total`` the columns span the whole schedule; without one, the last
    ``width`` samples are shown one per column.
    """
    n = len(values)
    if width <= 0 or n == 0:
        return []
    if not total or total <= 0:
        start = max(0, n - width)
        return [None if math.isnan(values[i]) else (values[i], keys[i]) for i in range(start, n)]
    bins: list[tuple[float, str] | None] = []
    for col in range(width):
        lo = col * total // width
        hi = max(lo + 1, (col + 1) * total // width)
        if lo >= n:
            break
        finite = [i for i in range(lo, min(hi, n)) if not math.isnan(values[i])]
        if not finite:
            bins.append(None)
            continue
        mean = math.fsum(values[i] for i in finite) / len(finite)
        bins.append((mean, keys[finite[-1]]))  # the key of the latest sample drawn
    return bins


def plot_scale(bins: Sequence[tuple[float, str] | None]) -> float:
    """Full bar height: the largest |value| shown (1 when there is nothing to scale by)."""
    scale = max((abs(b[0]) for b in bins if b is not None), default=0.0)
    return scale if scale > 1e-9 else 1.0


def render_bars(
    bins: Sequence[tuple[float, str] | None], channel: Channel, rows: int, width: int
) -> Text:
    """``rows`` lines (even: half above the axis, half below) of signed bars."""
    half = max(1, rows // 2)
    scale = plot_scale(bins)
    lines: list[list[tuple[str, str]]] = [[] for _ in range(2 * half)]
    blank = (" ", "")
    for col in range(width):
        b = bins[col] if col < len(bins) else None
        if b is None:
            for line in lines:
                line.append(blank)
            continue
        value, key = b
        style = bar_style(channel, key, value)
        eighths = round(abs(value) / scale * half * 8)
        for r in range(half):
            fill = max(0, min(8, eighths - 8 * r))
            up_row, down_row = lines[half - 1 - r], lines[half + r]
            if value > 0:
                up_row.append((_UP[fill], style) if fill else blank)
                down_row.append(blank)
            else:
                up_row.append(blank)
                # A top-aligned bar of `fill` eighths: the complement of a lower block,
                # drawn in reverse video.
                if fill == 0:
                    down_row.append(blank)
                elif fill == 8:
                    down_row.append(("█", style))
                else:
                    down_row.append((_UP[8 - fill], f"{style} reverse"))
    return Text("\n").join([text_from_cells(line) for line in lines])


class SignalPlot(Widget):
    """Header line (signal, latest value, what the current key expects) + signed bars."""

    DEFAULT_CSS = """
    SignalPlot { height: 5; }
    """

    def __init__(
        self, channel: Channel, *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.channel: Channel = channel
        self.values: Sequence[float] = ()
        self.keys: Sequence[str] = ()
        self.total: int | None = None
        self.current_key: str | None = None
        self._shown = -1

    def show(
        self,
        values: Sequence[float],
        keys: Sequence[str],
        total: int | None,
        current_key: str | None,
    ) -> None:
        """Plot ``values`` (one per perceived frame, NaN = gap); repaint only on change."""
        unchanged = values is self.values and len(values) == self._shown
        if unchanged and current_key == self.current_key:
            return
        self.values, self.keys, self.total, self.current_key = values, keys, total, current_key
        self._shown = len(values)
        self.refresh()

    def _header(self, scale: float | None) -> Text:
        label = CHANNEL_LABELS[self.channel]
        latest = self.values[-1] if self.values else None
        text = Text()
        text.append(f"{label:<5}", style="bold")
        text.append(f"now {signed(latest)}")
        key = self.current_key
        if key is not None:
            drives = key in FAMILY and channel_of(key) == self.channel
            text.append("   key ")
            text.append(key, style="bold")
            if drives:
                text.append(f" expects {expectation(key)}", style="bold")
            else:
                text.append(f" drives {expectation(key)}, not {label}", style="dim")
        if scale is not None:
            # Each plot scales to its own largest bar: say how tall that is.
            text.append(f"   full bar ±{scale:.3g}", style="dim")
        return text

    def render(self) -> RenderableType:
        width = self.content_size.width
        rows = max(2, self.content_size.height - 1)
        bins = bin_samples(self.values, self.keys, width, self.total)
        text = self._header(plot_scale(bins) if any(b is not None for b in bins) else None)
        text.append("\n")
        text.append_text(render_bars(bins, self.channel, rows, width))
        return text

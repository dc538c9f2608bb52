"""Text for metric values, keys and counts, shared by the dashboard's widgets.

Numbers go through ``streameval.leaderboard.format_value`` so the dashboard prints exactly what
``streameval table`` and the report print (two decimals on 0–100, four on WorldAtlas's [0, 1]
metrics, ``-0.00`` as ``0.00``).
"""

from __future__ import annotations

import math

from rich.text import Text
from streameval.protocol.keys import FAMILY, NO_KEY, channel_of, expected_sign

from streameval.core.metric_result import MetricResult
from streameval.errors import UnknownMetricError
from streameval.leaderboard import format_value
from streameval.metrics.registry import metric_spec

KEY_NAMES: dict[str, str] = {
    "W": "forward",
    "S": "backward",
    "A": "strafe left",
    "D": "strafe right",
    "L": "turn left",
    "R": "turn right",
    NO_KEY: "no key",
}
CHANNEL_LABELS: dict[str, str] = {"sx": "Sx", "srad": "Srad"}
STATUS_TEXT: dict[str, str] = {"not_applicable": "n/a", "missing": "missing"}


def metric_label(name: str) -> str:
    """The registered label of a metric, or its snake_case name made readable (a metric
    found in a file written by another version)."""
    try:
        return metric_spec(name).label
    except UnknownMetricError:
        return name.replace("_", " ").capitalize()


def metric_decimals(name: str | None) -> int:
    """The decimals of metric ``name`` (2 when unknown or unregistered)."""
    if name is None:
        return 2
    try:
        return metric_spec(name).decimals
    except UnknownMetricError:
        return 2


def metric_value_text(result: MetricResult | None, name: str | None = None) -> str:
    """``99.79`` (``0.8450`` for a WorldAtlas metric ``name``) for an official value, ``n/a`` /
    ``missing`` otherwise, ``…`` if unknown."""
    if result is None:
        return "…"
    if result.status == "official" and result.normalized is not None:
        return format_value(result.normalized, metric_decimals(name))
    if result.status == "official" and result.raw is not None:  # a statistic: its own unit
        return f"{result.raw:.4g}"
    return STATUS_TEXT.get(result.status, result.status)


def expectation(key: str) -> str:
    """What ``key`` should do to the flow: ``Sx +`` or ``Srad −``; ``—`` for no key."""
    if key not in FAMILY:
        return "—"
    sign = "+" if expected_sign(key) > 0 else "−"
    return f"{CHANNEL_LABELS[channel_of(key)]} {sign}"


def key_badge(key: str | None) -> Text:
    """The key in a reverse-video box, the way the live screen shows the current key."""
    if key is None:
        return Text(" · ", style="dim")
    return Text(f" {key} ", style="bold reverse")


def signed(value: float | None, digits: int = 3) -> str:
    """``+0.412`` / ``−0.018``; ``—`` when there is no value yet."""
    if value is None or math.isnan(value):
        return "—"
    text = f"{value:+.{digits}f}"
    return text.replace("-", "−")


def percent(fraction: float | None) -> str:
    return "—" if fraction is None else f"{100 * fraction:.0f}%"

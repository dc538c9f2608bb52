"""Interactivity in wall time: what a served model feels like to play (scores.json
``interactivity``, the dashboard). Pure numpy kernels over arrival times and the flow signals.

Not master-table metrics (no benchmark defines them; docs/methods.md#interactivity): they describe
the *session*, so they live in their own block under their own names.

- delivered fps: frames over the wall span of their arrivals (``timing.wall_rate``, as
  WorldAtlas's effective generation fps);
- jitter: |Δt − 1/fps| of consecutive arrivals, p50 and p95 in ms (0 for a perfect clock);
- stalls: gaps longer than ``STALL_INTERVALS`` nominal intervals, with their total time;
- key-to-response latency: from a keydown to the first frame that *moves the commanded way*
  (its flow channel, signed for the key, reaches half the episode's reference speed, the
  same threshold as WorldMark's response latency), in wall ms (``timing.key_response``, the
  primitive of WorldAtlas's action response latency, with this block's bar and window).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from streameval.constants import FLOW_STRIDE, LATENCY_THRESHOLD
from streameval.core.arrays import F64
from streameval.metrics.registry import MetricSpec, metric_specs
from streameval.metrics.timing import key_response, reference_bar, wall_rate
from streameval.protocol.keys import NO_KEY, channel_of, expected_sign

STALL_INTERVALS = 3.0
KEY_RESPONSE_SHARE = LATENCY_THRESHOLD
"""A key is answered once its channel reaches this share of the episode's reference speed, a
fixed bar: WorldMark's response-latency threshold, so that this figure and the Response
Latency column call the same motion "moving" (WorldAtlas's action response latency raises it
over a baseline instead, ``metrics/worldatlas/realtime.py``)."""
KEY_WINDOW_CLOSED = False
"""A key's search ends *before* the next key is sent: the windows are half-open, so each
frame answers at most one key (WorldAtlas's window includes its end)."""
FAMILY = "interactivity"
"""The registry family of the figures below (``metrics/catalog.py``): labels, units and
direction come from there, values from ``scores.json``'s ``interactivity`` block."""


def _ms(x: float) -> float:
    return round(1000.0 * x, 3)


def arrival_stats(arrivals: Sequence[float], fps: float) -> dict[str, float | int | None]:
    """Delivered fps, jitter p50/p95 and stalls from frame arrival times (seconds)."""
    t = np.asarray(arrivals, dtype=np.float64)
    if t.size < 2:
        return {
            "delivered_fps": None,
            "jitter_ms_p50": None,
            "jitter_ms_p95": None,
            "stalls": 0,
            "stall_seconds": 0.0,
        }
    dt = np.diff(t)
    period = 1.0 / fps
    jitter = np.abs(dt - period)
    stalled = dt > STALL_INTERVALS * period
    rate = wall_rate(t).fps
    return {
        "delivered_fps": round(rate, 3) if rate is not None else None,
        "jitter_ms_p50": _ms(float(np.percentile(jitter, 50))),
        "jitter_ms_p95": _ms(float(np.percentile(jitter, 95))),
        "stalls": int(stalled.sum()),
        "stall_seconds": round(float(dt[stalled].sum()), 3),
    }


def key_response_latencies(
    key_times: Sequence[float],
    key_names: Sequence[str],
    arrivals: Sequence[float],
    sx: F64,
    srad: F64,
) -> list[float | None]:
    """Per keydown: seconds until the first frame moving the commanded way (None: never,
    before the next key). Signal sample i is the flow from frame i to i + FLOW_STRIDE, so it
    shows the motion once frame i + FLOW_STRIDE has arrived."""
    t = np.asarray(arrivals, dtype=np.float64)
    n = min(sx.size, srad.size, max(0, t.size - FLOW_STRIDE))
    if n == 0:
        return [None for _ in key_names]
    channels = {"sx": sx[:n], "srad": srad[:n]}
    bars = {name: reference_bar(values, KEY_RESPONSE_SHARE) for name, values in channels.items()}
    out: list[float | None] = []
    for j, (t_key, key) in enumerate(zip(key_times, key_names, strict=True)):
        if key == NO_KEY:
            out.append(None)
            continue
        t_end = key_times[j + 1] if j + 1 < len(key_times) else math.inf
        channel = channel_of(key)
        signed = expected_sign(key) * channels[channel]
        hit = key_response(signed, t, t_key, t_end, bars[channel], end_inclusive=KEY_WINDOW_CLOSED)
        out.append(hit.latency_s if hit is not None else None)
    return out


def latency_summary(latencies: Sequence[float | None]) -> dict[str, float | int | None]:
    measured = [x for x in latencies if x is not None]
    return {
        "key_switches": len(latencies),
        "key_responses": len(measured),
        "key_to_response_ms_median": _ms(float(np.median(measured))) if measured else None,
        "key_to_response_ms_max": _ms(max(measured)) if measured else None,
    }


def registered_figures(block: Mapping[str, Any]) -> list[tuple[MetricSpec, float]]:
    """The registered interactivity figures of a ``scores.json`` ``interactivity`` block, in
    registry order, each with its value (a figure the block lacks or holds as null is left
    out: an in-process run has no key response, an old file no ``frames_missing``)."""
    out: list[tuple[MetricSpec, float]] = []
    for spec in metric_specs(family=FAMILY):
        value = block.get(spec.name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out.append((spec, float(value)))
    return out


def format_figure(spec: MetricSpec, value: float) -> str:
    """``15.9 fps``, ``212 ms``, ``0 frames``: the value in its own unit."""
    if spec.unit in ("frames", "count"):
        shown = f"{value:.0f}"
    elif spec.unit == "ms":
        shown = f"{value:.0f}" if abs(value) >= 10 else f"{value:.1f}"
    else:
        shown = f"{value:.1f}"
    return shown if spec.unit == "count" else f"{shown} {spec.unit}"

"""The real-time episode kernel as the metric registry calls it: cache in, four results out.

It reads only the episode cache (``timing.npz``, the flow signals, ``episode.json``'s
session kind, interactivity block and configuration), so a live run, the replay of its
recording and ``rescore`` agree bit for bit (docs/methods.md#real-time-metrics).

Which session earns which metric: a **served** model (a network transport) gets all four; an
**in-process** run is stepped as fast as the model and perception go, so its frame rate is no
served model's generation rate and the two throughput metrics are not_applicable (its action
latency is still measured); a replay of a rollout that no live session recorded has no
generation wall time at all: all four are not_applicable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from streameval.constants import LATENCY_THRESHOLD
from streameval.core.arrays import F64
from streameval.core.episode.cache import EpisodeCache
from streameval.core.episode.timing import TimingCache
from streameval.core.metric_result import MetricResult
from streameval.metrics.registry import ScoringInput
from streameval.metrics.timing import reference_bar, wall_rate
from streameval.metrics.worldatlas.constants import DEFAULT_LATENCY_BUDGET_S, RESPONSE_TIMEOUT_S
from streameval.metrics.worldatlas.realtime import (
    Response,
    action_responses,
    budget_pass_rate,
    clamp01,
    latency_score,
    mean_latency,
    realtime_factor,
)
from streameval.protocol.keys import NO_KEY, channel_of, expected_sign

REALTIME_METRICS = (
    "effective_generation_fps",
    "realtime_factor",
    "action_response_latency",
    "latency_budget_pass_rate",
)
SERVED = "served"
IN_PROCESS = "in-process"
NOT_SERVED = (
    "in-process run: frames are stepped as fast as the model and perception go, so there is "
    "no served model's generation wall time"
)
NOT_LIVE = (
    "replayed rollout without a recorded live session: its frame times are the replay's, "
    "not a model's generation"
)


def latency_budget(meta: Mapping[str, Any]) -> float:
    """The budget the episode was scored with (``--latency-budget``, kept in the provenance's
    configuration so that ``rescore`` applies it again); 1 s for a cache without one."""
    provenance = meta.get("provenance")
    config = provenance.get("config") if isinstance(provenance, dict) else None
    value = config.get("latency_budget_s") if isinstance(config, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return DEFAULT_LATENCY_BUDGET_S
    if math.isfinite(value) and value > 0:
        return float(value)
    return DEFAULT_LATENCY_BUDGET_S


def realtime_metrics(cache: EpisodeCache) -> dict[str, MetricResult]:
    """The four real-time metrics of an episode from its cache."""
    meta = cache.meta
    if "session" not in meta:
        reason = "no session timing in the cache (written before the real-time metrics)"
        return {name: MetricResult.missing(reason) for name in REALTIME_METRICS}
    kind = meta["session"]
    if kind not in (SERVED, IN_PROCESS):
        return {name: MetricResult.not_applicable(NOT_LIVE) for name in REALTIME_METRICS}
    timing = cache.timing
    if timing is None:
        reason = "a live session without cache/timing.npz: frame arrival times were not kept"
        return {name: MetricResult.missing(reason) for name in REALTIME_METRICS}
    block = meta.get("interactivity")
    chunk = block.get("chunk_frames_median") if isinstance(block, dict) else None
    chunk_frames = int(chunk) if isinstance(chunk, int) and chunk > 0 else None
    return {
        **_throughput(kind, timing, cache.fps),
        **_latency(cache, timing, latency_budget(meta), chunk_frames),
    }


def realtime_scores(inp: ScoringInput) -> dict[str, MetricResult]:
    """Registry entry point (``metrics/catalog.py``)."""
    return realtime_metrics(inp.cache)


def _throughput(kind: str, timing: TimingCache, fps: float) -> dict[str, MetricResult]:
    if kind != SERVED:
        return {
            "effective_generation_fps": MetricResult.not_applicable(NOT_SERVED),
            "realtime_factor": MetricResult.not_applicable(NOT_SERVED),
        }
    span = wall_rate(timing.arrivals)
    frames, wall, rate = span.frames, span.wall_s, span.fps
    factor = realtime_factor(span, fps)
    if rate is None or factor is None:
        reason = f"{frames} frame(s) with an arrival time: no wall span to divide by"
        return {
            "effective_generation_fps": MetricResult.missing(reason),
            "realtime_factor": MetricResult.missing(reason),
        }
    details = {"frames": frames, "wall_seconds": wall, "target_fps": fps}
    return {
        "effective_generation_fps": MetricResult.official(
            rate, clamp01(rate / fps), {"unit": "fps", **details}
        ),
        "realtime_factor": MetricResult.official(
            factor, clamp01(factor), {"unit": "x", "video_seconds": (frames - 1) / fps, **details}
        ),
    }


def _floors(cache: EpisodeCache) -> dict[str, float]:
    """Each channel's threshold floor: half its reference speed, as the interactivity block's
    key-to-response latency and WorldMark's response latency use (inf: no finite sample)."""
    return {
        "sx": reference_bar(cache.sx, LATENCY_THRESHOLD),
        "srad": reference_bar(cache.srad, LATENCY_THRESHOLD),
    }


def _latency(
    cache: EpisodeCache, timing: TimingCache, budget_s: float, chunk_frames: int | None
) -> dict[str, MetricResult]:
    times = timing.change_times
    nexts = np.append(times[1:], math.inf)
    wanted = [j for j, key in enumerate(timing.change_keys) if key != NO_KEY]
    if not wanted:
        reason = "no action change was sent"
        return {
            "action_response_latency": MetricResult.not_applicable(reason),
            "latency_budget_pass_rate": MetricResult.not_applicable(reason),
        }
    floors = _floors(cache)
    keys = [timing.change_keys[j] for j in wanted]
    signals: list[F64] = [
        expected_sign(k) * (cache.sx if channel_of(k) == "sx" else cache.srad) for k in keys
    ]
    # past WorldAtlas's 1 s timeout when the budget is longer: an answer within it counts
    timeout = max(RESPONSE_TIMEOUT_S, budget_s)
    responses = action_responses(
        signals,
        timing.arrivals,
        times[wanted],
        nexts[wanted],
        np.array([floors[channel_of(k)] for k in keys], dtype=np.float64),
        timeout,
    )
    raw = mean_latency(responses)
    rate = budget_pass_rate(responses, budget_s)
    assert raw is not None and rate is not None  # responses is never empty here
    details = _latency_details(keys, responses, raw, cache.fps, chunk_frames)
    details.update(budget_seconds=budget_s, timeout_seconds=timeout)
    return {
        "action_response_latency": MetricResult.official(
            raw, latency_score(raw, budget_s), {"unit": "s", **details}
        ),
        "latency_budget_pass_rate": MetricResult.official(rate, rate, details),
    }


def _latency_details(
    keys: list[str],
    responses: list[Response],
    raw: float,
    fps: float,
    chunk_frames: int | None,
) -> dict[str, Any]:
    """The latency in seconds, nominal frames and chunks, and each change's answer."""
    frames = raw * fps
    return {
        "changes": len(responses),
        "missing_response_count": sum(1 for r in responses if not r.answered),
        "latency_seconds": raw,
        "latency_frames": frames,
        "latency_chunks": frames / chunk_frames if chunk_frames else None,
        "chunk_frames": chunk_frames,
        "keys": keys,
        "latencies_seconds": [r.latency_s for r in responses],
        "response_frames": [r.frames for r in responses],
    }


def raw_summary(name: str, raw: float, details: Mapping[str, Any]) -> str:
    """What a real-time value stands on, in its own units, for the dashboard and the report:
    ``8.30 fps · 49 frames in 5.21 s``, ``0.844 s · 13.5 frames · 1.50 chunks · 1 unanswered``.
    Empty for a name that is no real-time metric."""
    if name in ("effective_generation_fps", "realtime_factor"):
        shown = f"{raw:.2f} fps" if name == "effective_generation_fps" else f"{raw:.3f}×"
        frames, wall = details.get("frames"), details.get("wall_seconds")
        if isinstance(frames, int) and isinstance(wall, int | float):
            shown += f" · {frames} frames in {wall:.2f} s"
        return shown
    if name not in ("action_response_latency", "latency_budget_pass_rate"):
        return ""
    latency = details.get("latency_seconds")
    parts = [f"{raw:.2f} passed"] if name == "latency_budget_pass_rate" else []
    if isinstance(latency, int | float):
        parts.append(f"{latency:.3f} s")
    frames, chunks = details.get("latency_frames"), details.get("latency_chunks")
    if isinstance(frames, int | float):
        parts.append(f"{frames:.1f} frames")
    if isinstance(chunks, int | float):
        parts.append(f"{chunks:.2f} chunks")
    missing = details.get("missing_response_count")
    if isinstance(missing, int) and missing:
        parts.append(f"{missing} unanswered")
    budget = details.get("budget_seconds")
    if name == "latency_budget_pass_rate" and isinstance(budget, int | float):
        parts.append(f"budget {budget:g} s")
    return " · ".join(parts)

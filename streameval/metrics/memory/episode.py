"""Local, Revisit and Global Memory of one episode from its cache: the episode adapter the
metric registry calls (``metrics/catalog.py``), beside the memory kernels it calls
(docs/methods.md#memory-metrics).

It reads what perception kept (``cache.memory``: embeddings, cuts, views) and the cache's
record of how (``meta["memory"]``: calibration, a failed cut detector, unusable sidecars), so
a live run, the replay of its recording and ``rescore`` score the same arrays.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from streameval.constants import ANALYSIS_WIDTH
from streameval.core.episode.cache import EpisodeCache
from streameval.core.metric_result import MetricResult
from streameval.metrics.fits.camera import camera_of
from streameval.metrics.fits.geometry import views_from_frames
from streameval.metrics.memory.global_memory import REASON_NO_BACKEND, global_memory
from streameval.metrics.memory.local_memory import local_memory
from streameval.metrics.memory.revisit_memory import (
    equal_split_reversals,
    find_reversals,
    revisit_memory_for,
)
from streameval.metrics.registry import ScoringInput
from streameval.metrics.segments import equal_split_keys

MEMORY_METRICS = ("local_memory", "revisit_memory", "global_memory")


def memory_metrics(cache: EpisodeCache) -> dict[str, MetricResult]:
    """Local, Revisit and Global Memory (docs/methods.md#memory-metrics) from what perception
    kept."""
    mem = cache.memory
    info: dict[str, Any] = cache.meta.get("memory", {})
    if mem is None:
        reason = "memory perception was off for this episode"
        return {name: MetricResult.missing(reason) for name in MEMORY_METRICS}
    local = local_memory(
        cache.sx, cache.srad, mem.embeddings, mem.cuts, cache.fps, **_local_scale(info)
    )
    if mem.cuts is None and info.get("cut_interrupted"):
        # the run was interrupted (SIGINT, SIGTERM) before the detector finished: not its fault
        local = MetricResult.missing(
            f"the run was interrupted before the cut detector finished ({info['cut_failure']})",
            local.details,
        )
    elif mem.cuts is None and info.get("cut_failure"):
        # the kernel says "missing"; say why, naming the detector
        # (docs/methods.md#a-failed-cut-detector-is-missing)
        local = MetricResult.missing(f"cut detector failed: {info['cut_failure']}", local.details)
    split = equal_split_keys(cache.meta)
    # degrees of yaw as flow: the episode's camera (docs/methods.md#known-intrinsics)
    camera = camera_of(cache.meta)
    per_degree = camera.px_per_degree(ANALYSIS_WIDTH)
    if split is not None:  # the reference's split of a delivery without an action log
        reversals = equal_split_reversals(split, cache.sx.size)
    else:
        reversals = find_reversals(cache.frame_keys, cache.sx.size, cache.fps)
    revisit = revisit_memory_for(
        cache.sx, cache.srad, reversals, mem.embeddings, cache.fps, per_degree
    )
    revisit = replace(revisit, details={**revisit.details, "camera": camera.to_json()})
    if local.details.get("frozen"):
        # A world that never moves is trivially self-consistent: 100 would reward the freeze
        # (WorldMark excludes frozen videos from memory; Local Memory's frozen rule decides).
        glob = MetricResult.not_applicable(
            "frozen", {"frozen": True, "views": [v.frame for v in mem.views]}
        )
    elif mem.views:
        glob = global_memory(views_from_frames(mem.views))
    elif info.get("global_missing"):  # pose/depth sidecars present but unusable
        glob = MetricResult.missing(str(info["global_missing"]))
    else:
        glob = global_memory(
            None, unavailable_reason=info.get("global_reason") or REASON_NO_BACKEND
        )
    return {"local_memory": local, "revisit_memory": revisit, "global_memory": glob}


def _local_scale(info: dict[str, Any]) -> dict[str, float]:
    """Local Memory's scale of the embeddings as the cache recorded it (distance scale and
    wider-kernel exponent, docs/methods.md#cpu-defaults-and-backends); a cache from before
    calibrations (or the Local kernel) were recorded was scored without them, and still is, so
    that ``rescore`` reproduces it."""
    calibration = info.get("embedding_calibration") or {}
    return {
        "distance_scale": float(calibration.get("distance_scale", 1.0)),
        "local_exponent": float(calibration.get("local_exponent", 1.0)),
    }


def memory_scores(inp: ScoringInput) -> dict[str, MetricResult]:
    """Local, Revisit and Global Memory (docs/methods.md#memory-metrics)."""
    return memory_metrics(inp.cache)

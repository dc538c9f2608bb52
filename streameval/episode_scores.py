"""Scores of one episode from its cache: the single path shared by live, replay and rescore.

Bit-identity between a live run, a replay of its recording and ``rescore`` holds because all
three call :func:`score_episode` on the same cache arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streameval.cache import EpisodeCache
from streameval.constants import ANALYSIS_WIDTH
from streameval.metrics.control import MotionType, control_metrics
from streameval.metrics.memory_global import REASON_NO_BACKEND, global_memory
from streameval.metrics.memory_local import local_memory
from streameval.metrics.memory_revisit import revisit_memory
from streameval.perception.motion_type import (
    MotionFit,
    analysis_focal,
    fit_frames,
    fit_motion_type,
)
from streameval.perception.reconstruction import views_from_frames
from streameval.protocol.keys import FAMILY
from streameval.protocol.schedule import segments_from_keys
from streameval.results import MetricResult
from streameval.scores_file import scores_document
from streameval.worldatlas_columns import MEMORY_LOOP_SUITE
from streameval.worldatlas_track import worldatlas_metrics

MEMORY_METRICS = ("local_memory", "revisit_memory", "global_memory")
QUALITY_METRICS = ("perceptual_quality", "aesthetic_quality")
# SPEC §6: only Q-Align (OneAlign) scores carry these names; without it they are
# not_applicable, never a number from a cheaper statistic.
NO_QUALITY_BACKEND = "no Q-Align (OneAlign) backend in this version of streameval"


@dataclass(frozen=True, slots=True)
class EpisodeScores:
    metrics: dict[str, MetricResult]
    motion_fits: dict[int, MotionFit | None]

    def motion_types_json(self) -> list[dict[str, Any]]:
        return [
            {"segment": j, **(fit.to_json() if fit else {"status": "no_fit"})}
            for j, fit in sorted(self.motion_fits.items())
        ]


def motion_fits(cache: EpisodeCache) -> dict[int, MotionFit | None]:
    """Motion-type fit of every lateral and yaw segment (SPEC §3), keyed by segment index."""
    by_frame = {s.frame: s for s in cache.fit_samples}
    focal = analysis_focal(int(cache.meta.get("analysis_width", ANALYSIS_WIDTH)))
    fits: dict[int, MotionFit | None] = {}
    for j, seg in enumerate(segments_from_keys(cache.frame_keys)):
        if FAMILY.get(seg.key) not in ("lat", "yaw"):
            continue
        wanted = fit_frames(seg.start, seg.end, cache.fps)
        samples = [by_frame[f] for f in wanted if f in by_frame]
        fits[j] = fit_motion_type(samples, focal)
    return fits


def memory_metrics(cache: EpisodeCache) -> dict[str, MetricResult]:
    """Local, Revisit and Global Memory (SPEC §5) from what perception kept."""
    mem = cache.memory
    info: dict[str, Any] = cache.meta.get("memory", {})
    if mem is None:
        reason = "memory perception was off for this episode"
        return {name: MetricResult.missing(reason) for name in MEMORY_METRICS}
    local = local_memory(cache.sx, cache.srad, mem.embeddings, mem.cuts, cache.fps)
    if mem.cuts is None and info.get("cut_failure"):
        # the kernel says "missing"; say why, naming the detector (SPEC §5 FIX: never "no cut")
        local = MetricResult.missing(f"cut detector failed: {info['cut_failure']}", local.details)
    revisit = revisit_memory(cache.sx, cache.srad, cache.frame_keys, mem.embeddings, cache.fps)
    if local.details.get("frozen"):
        # A world that never moves is trivially self-consistent: 100 would reward the freeze
        # (seed 000 excludes frozen videos from memory; Local Memory's frozen rule decides).
        glob = MetricResult.not_applicable(
            "frozen", {"frozen": True, "views": [v.frame for v in mem.views]}
        )
    elif mem.views:
        glob = global_memory(views_from_frames(mem.views))
    else:
        glob = global_memory(
            None, unavailable_reason=info.get("global_reason") or REASON_NO_BACKEND
        )
    return {"local_memory": local, "revisit_memory": revisit, "global_memory": glob}


def score_episode(cache: EpisodeCache, *, final: bool = True) -> EpisodeScores:
    """All metrics of the episode that its cache supports.

    Provisional scores (``final=False``, while the episode runs) are the control metrics
    only: memory is measured once, at episode end, from everything perception kept.
    """
    # depth_source stays in provenance, not in metric details: a live run (depth from the
    # model) and the replay of its recording (depth from the sidecar) score bit-identically.
    fits = motion_fits(cache)
    types = {j: MotionType(p_trans=f.p_trans, p_yaw=f.p_yaw) for j, f in fits.items() if f}
    metrics = control_metrics(
        cache.sx, cache.srad, cache.frame_keys, cache.fps, types, provisional=not final
    )
    if final:
        metrics.update(memory_metrics(cache))
        if cache.meta.get("suite") == MEMORY_LOOP_SUITE:
            metrics.update(worldatlas_metrics(cache, cache.worldatlas))
        metrics.update(
            {n: MetricResult.not_applicable(NO_QUALITY_BACKEND) for n in QUALITY_METRICS}
        )
    return EpisodeScores(metrics, fits)


def episode_document(
    cache_meta: dict[str, Any], scores: EpisodeScores, frames: int
) -> dict[str, Any]:
    """The ``scores.json`` payload of an episode from its cache metadata and its scores: the
    one mapping from cache to results file, shared by the pipeline and ``rescore``."""
    return scores_document(
        model=cache_meta["model"],
        suite=cache_meta["suite"],
        episode=cache_meta["episode"],
        fps=cache_meta["fps"],
        frames=frames,
        complete=cache_meta.get("complete", True),
        metrics=scores.metrics,
        motion_types=scores.motion_types_json(),
        interactivity=cache_meta.get("interactivity", {}),
        provenance=cache_meta.get("provenance", {}),
        errors=cache_meta.get("errors", []),
    )

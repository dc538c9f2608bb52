"""The WorldAtlas episode kernel as the metric registry calls it: cache in, four results out.

Registered in ``metrics/catalog.py`` for the memory_loop suite only. It reads nothing but the
episode cache (``cache/worldatlas.npz`` beside the signals), so a live run, the replay of its
recording and ``rescore`` score the same arrays and agree bit for bit.
"""

from __future__ import annotations

import numpy as np

from streameval.core.episode.cache import EpisodeCache
from streameval.core.episode.worldatlas import WorldAtlasCache
from streameval.core.metric_result import MetricResult
from streameval.metrics.registry import ScoringInput
from streameval.metrics.worldatlas.episode import (
    WORLDATLAS_METRICS,
    MemoryLoopInputs,
    score_memory_loop,
)
from streameval.metrics.worldatlas.scene_f1 import DepthSidecar
from streameval.protocol.memory_loop import MEMORY_LOOP_SUITE

# A pose track without metric scale (our CPU estimator's) cannot meet nATEt's activity
# threshold in units per second: the kernel reports nATEt not_applicable for it.
SCALE_FREE_SOURCES = frozenset({"cpu_estimator"})


def worldatlas_metrics(
    cache: EpisodeCache, atlas: WorldAtlasCache | None
) -> dict[str, MetricResult]:
    """The four WorldAtlas metrics of a memory_loop episode from its cache."""
    if atlas is None:
        reason = "no WorldAtlas cache (cache/worldatlas.npz): poses and depth were not kept"
        return {name: MetricResult.missing(reason) for name in WORLDATLAS_METRICS}
    depth = None
    depth_problem = None
    if atlas.depth is not None and atlas.valid is not None and atlas.intrinsics is not None:
        have = np.isfinite(atlas.intrinsics).all(axis=(1, 2))
        if have.any():
            # Frames without depth repeat no intrinsics: they are simply invalid everywhere.
            intr = atlas.intrinsics.copy()
            intr[~have] = atlas.intrinsics[np.flatnonzero(have)[0]]
            depth = DepthSidecar(atlas.depth.astype(np.float32), atlas.valid, intr)
        else:
            depth_problem = "no frame carried intrinsics with its depth"
    inputs = MemoryLoopInputs(
        poses=atlas.poses,
        pose_source=atlas.pose_source,
        frame_keys=cache.frame_keys,
        fps=cache.fps,
        depth=depth,
        depth_problem=depth_problem,
        translation_scale_known=atlas.pose_source not in SCALE_FREE_SOURCES,
    )
    results = score_memory_loop(inputs)
    return _spoiled_by_bad_sidecars(results, atlas.problems)


# Which metrics an unusable sidecar leaves without input: poses feed all four, the depth,
# its mask and the intrinsics only the back-projection of scene F1.
_NEEDS = {"poses": WORLDATLAS_METRICS, "depth": ("memory_scene_f1",)}


def _spoiled_by_bad_sidecars(
    results: dict[str, MetricResult], problems: dict[str, str]
) -> dict[str, MetricResult]:
    out = dict(results)
    for kind in ("depth", "poses"):  # a bad pose file is the reason that matters most
        if kind in problems:
            for name in _NEEDS[kind]:
                out[name] = MetricResult.missing(f"unusable sidecar: {problems[kind]}")
    return out


def worldatlas_scores(inp: ScoringInput) -> dict[str, MetricResult]:
    """Registry kernel: the WorldAtlas metrics of a memory_loop episode (other suites:
    not_applicable, though the registry only calls this for memory_loop episodes)."""
    suite = inp.cache.meta.get("suite")
    if suite != MEMORY_LOOP_SUITE:
        reason = f"defined for memory_loop trajectories, not the {suite} suite"
        return {name: MetricResult.not_applicable(reason) for name in WORLDATLAS_METRICS}
    return worldatlas_metrics(inp.cache, inp.cache.worldatlas)

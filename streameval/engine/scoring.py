"""Scores of one episode from its cache: the single path shared by live, replay and rescore.

Bit-identity between a live run, a replay of its recording and ``rescore`` holds because all
three call :func:`score_episode` on the same cache arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streameval.constants import ANALYSIS_WIDTH
from streameval.core.metric_result import MetricResult
from streameval.engine.quality_scoring import quality_metrics
from streameval.metrics.control.kernels import (
    MotionType,
    control_metrics_for_spans,
)
from streameval.metrics.fits.geometry import views_from_frames
from streameval.metrics.fits.motion_type import (
    MotionFit,
    analysis_focal,
    fit_frames,
    fit_frames_equal_split,
    fit_motion_type,
)
from streameval.metrics.memory.global_memory import REASON_NO_BACKEND, global_memory
from streameval.metrics.memory.local_memory import local_memory
from streameval.metrics.memory.revisit_memory import (
    equal_split_reversals,
    revisit_memory,
    revisit_memory_for,
)
from streameval.metrics.registry import metric_specs, resolve_target
from streameval.metrics.segments import (
    SegmentSpan,
    equal_split_keys,
    equal_split_spans,
    segment_spans,
)
from streameval.protocol.keys import FAMILY
from streameval.protocol.schedule import segments_from_keys
from streameval.results.cache.episode import EpisodeCache
from streameval.results.scores_file import scores_document

MEMORY_METRICS = ("local_memory", "revisit_memory", "global_memory")
# The control columns' kernel, as registered (``provisional.LiveScores`` updates it
# incrementally).
CONTROL_KERNEL = "streameval.engine.scoring:control_scores"


@dataclass(frozen=True, slots=True)
class EpisodeScores:
    metrics: dict[str, MetricResult]
    motion_fits: dict[int, MotionFit | None]

    def motion_types_json(self) -> list[dict[str, Any]]:
        return [
            {"segment": j, **(fit.to_json() if fit else {"status": "no_fit"})}
            for j, fit in sorted(self.motion_fits.items())
        ]


def fit_plan(keys: list[str] | None, frame_keys: list[str], fps: float) -> dict[int, list[int]]:
    """The fit frames of every lateral and yaw segment, keyed by segment index: the per-frame
    keys' runs, or, for a delivery without an action log (``keys``), the reference's picks on
    its equal split (``fit_frames_equal_split``). Perception samples exactly these frames."""
    n_frames = len(frame_keys)
    if keys is not None:
        return {
            j: fit_frames_equal_split(j, len(keys), n_frames, fps)
            for j, key in enumerate(keys)
            if FAMILY.get(key) in ("lat", "yaw")
        }
    return {
        j: fit_frames(seg.start, seg.end, fps, n_frames)
        for j, seg in enumerate(segments_from_keys(frame_keys))
        if FAMILY.get(seg.key) in ("lat", "yaw")
    }


def motion_fits(cache: EpisodeCache) -> dict[int, MotionFit | None]:
    """Motion-type fit of every lateral and yaw segment (docs/methods.md#motion-type-fit), keyed by
    segment index."""
    by_frame = {s.frame: s for s in cache.fit_samples}
    focal = analysis_focal(int(cache.meta.get("analysis_width", ANALYSIS_WIDTH)))
    plan = fit_plan(equal_split_keys(cache.meta), cache.frame_keys, cache.fps)
    stable = {span.index: span.stable for span in control_spans(cache)}
    return {
        j: fit_motion_type([by_frame[f] for f in wanted if f in by_frame], focal, stable.get(j))
        for j, wanted in plan.items()
    }


def control_spans(cache: EpisodeCache) -> list[SegmentSpan]:
    """The segments the control columns score: for a delivery without an action log the
    reference's equal split of the last signal sample's time
    (docs/methods.md#departures-from-the-reference), so the windows equal the published
    benchmark's; else the key log's runs."""
    split = equal_split_keys(cache.meta)
    if split is not None and cache.sx.size:
        return equal_split_spans(split, cache.sx.size, cache.fps)
    return segment_spans(cache.frame_keys, cache.sx.size, cache.fps)


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
    if mem.cuts is None and info.get("cut_failure"):
        # the kernel says "missing"; say why, naming the detector
        # (docs/methods.md#a-failed-cut-detector-is-missing)
        local = MetricResult.missing(f"cut detector failed: {info['cut_failure']}", local.details)
    split = equal_split_keys(cache.meta)
    if split is not None:  # the reference's split of a delivery without an action log
        reversals = equal_split_reversals(split, cache.sx.size)
        revisit = revisit_memory_for(cache.sx, cache.srad, reversals, mem.embeddings, cache.fps)
    else:
        revisit = revisit_memory(cache.sx, cache.srad, cache.frame_keys, mem.embeddings, cache.fps)
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


@dataclass(frozen=True, slots=True)
class ScoringInput:
    """What an episode kernel registered in ``metrics/registry.py`` receives.

    ``cache``: the episode cache (signals, samples, memory); ``motion_fits``: the motion-type
    fit of every lat/yaw segment, computed once and shared (control needs it, ``scores.json``
    reports it); ``final``: False while the episode runs (provisional scores of ``live``
    metrics on the prefix).
    """

    cache: EpisodeCache
    motion_fits: Mapping[int, MotionFit | None]
    final: bool


def control_scores(inp: ScoringInput) -> dict[str, MetricResult]:
    """The eight control columns (docs/methods.md#control-metrics), provisional unless
    ``inp.final``."""
    cache = inp.cache
    types = {
        j: MotionType(p_trans=f.p_trans, p_yaw=f.p_yaw) for j, f in inp.motion_fits.items() if f
    }
    return control_metrics_for_spans(
        cache.sx, cache.srad, control_spans(cache), cache.fps, types, provisional=not inp.final
    )


def memory_scores(inp: ScoringInput) -> dict[str, MetricResult]:
    """Local, Revisit and Global Memory (docs/methods.md#memory-metrics)."""
    return memory_metrics(inp.cache)


def quality_scores(inp: ScoringInput) -> dict[str, MetricResult]:
    """Q-Align columns, WorldAtlas rollout drift and the CPU imaging statistics
    (docs/methods.md#quality-metrics)."""
    return quality_metrics(inp.cache.quality, inp.cache.fps)


def score_episode(cache: EpisodeCache, *, final: bool = True) -> EpisodeScores:
    """Every registered metric of the episode that its cache supports, in registry order.

    Provisional scores (``final=False``, while the episode runs) are the ``live`` metrics
    only (the control columns): memory is measured once, at episode end, from everything
    perception kept. Each registered kernel runs once, however many metrics it scores; a
    metric registered for other suites (``MetricSpec.suites``) is left out, not reported
    not_applicable in every worldmark file.
    """
    # depth_source stays in provenance, not in metric details: a live run (depth from the
    # model) and the replay of its recording (depth from the sidecar) score bit-identically.
    inp = ScoringInput(cache, motion_fits(cache), final)
    outputs: dict[str, Mapping[str, MetricResult]] = {}
    metrics: dict[str, MetricResult] = {}
    suite = str(cache.meta.get("suite", ""))
    for spec in metric_specs():
        if spec.kernel is None or not (final or spec.live) or not spec.applies_to(suite):
            continue
        if spec.kernel not in outputs:
            outputs[spec.kernel] = resolve_target(spec.kernel)(inp)
        out = outputs[spec.kernel]
        metrics[spec.name] = (
            out[spec.name]
            if spec.name in out
            else MetricResult.missing(f"kernel {spec.kernel} did not score {spec.name}")
        )
    return EpisodeScores(metrics, dict(inp.motion_fits))


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
        case=cache_meta.get("case"),
        conditioning=cache_meta.get("conditioning"),
    )

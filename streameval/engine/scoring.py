"""Scores of one episode from its cache: the single path shared by live, replay and rescore.

Bit-identity between a live run, a replay of its recording and ``rescore`` holds because all
three call :func:`score_episode` on the same cache arrays. The engine's part is building the
kernels' shared input (the fit plan perception samples, the motion-type fits) and running every
registered kernel once; each family's episode adapter lives beside its kernels
(``metrics/<family>/``, the targets in ``metrics/catalog.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streameval.constants import ANALYSIS_WIDTH
from streameval.core.episode.cache import EpisodeCache
from streameval.core.episode.motion import MotionFit
from streameval.core.episode.scores import EpisodeScores
from streameval.core.metric_result import MetricResult
from streameval.metrics.control.episode import control_spans
from streameval.metrics.fits.camera import camera_of
from streameval.metrics.fits.motion_type import (
    fit_frames,
    fit_frames_equal_split,
    fit_motion_type,
)
from streameval.metrics.registry import ScoringInput, metric_specs, resolve_target
from streameval.metrics.segments import equal_split_keys
from streameval.protocol.keys import FAMILY
from streameval.protocol.schedule import segments_from_keys
from streameval.results.scores_file import scores_document


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
    # the episode's camera: its own intrinsics when the model or the case stated them, else
    # WorldMark's 70° (docs/methods.md#known-intrinsics)
    focal = camera_of(cache.meta).focal(int(cache.meta.get("analysis_width", ANALYSIS_WIDTH)))
    plan = fit_plan(equal_split_keys(cache.meta), cache.frame_keys, cache.fps)
    stable = {span.index: span.stable for span in control_spans(cache)}
    return {
        j: fit_motion_type([by_frame[f] for f in wanted if f in by_frame], focal, stable.get(j))
        for j, wanted in plan.items()
    }


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
    cache_meta: dict[str, Any],
    scores: EpisodeScores,
    frames: int,
    runtime: dict[str, Any] | None = None,
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
        runtime=runtime,
    )

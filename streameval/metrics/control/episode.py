"""The control columns of one episode from its cache: the episode adapter the metric registry
calls (``metrics/catalog.py``), beside the control kernels it calls.

The segments come from the cache (``control_spans``): the key log's runs, or for a delivery
without an action log the reference's equal split. The motion-type fits arrive computed once
in ``ScoringInput.motion_fits`` (the engine shares them with ``scores.json``'s
``motion_types``); the engine's provisional scores update the same columns incrementally
(``metrics/control/online.py``) under the same registered target (``catalog.CONTROL_KERNEL``).
"""

from __future__ import annotations

from dataclasses import replace

from streameval.core.episode.cache import EpisodeCache
from streameval.core.metric_result import MetricResult
from streameval.metrics.control.kernels import MotionType, control_metrics_for_spans
from streameval.metrics.fits.camera import camera_of
from streameval.metrics.registry import ScoringInput
from streameval.metrics.segments import (
    SegmentSpan,
    equal_split_keys,
    equal_split_spans,
    segment_spans,
)


def control_spans(cache: EpisodeCache) -> list[SegmentSpan]:
    """The segments the control columns score: for a delivery without an action log the
    reference's equal split of the last signal sample's time
    (docs/methods.md#departures-from-the-reference), so the windows equal the published
    benchmark's; else the key log's runs."""
    split = equal_split_keys(cache.meta)
    if split is not None and cache.sx.size:
        return equal_split_spans(split, cache.sx.size, cache.fps)
    return segment_spans(cache.frame_keys, cache.sx.size, cache.fps)


def control_scores(inp: ScoringInput) -> dict[str, MetricResult]:
    """The eight control columns (docs/methods.md#control-metrics), provisional unless
    ``inp.final``."""
    cache = inp.cache
    types = {
        j: MotionType(p_trans=f.p_trans, p_yaw=f.p_yaw) for j, f in inp.motion_fits.items() if f
    }
    results = control_metrics_for_spans(
        cache.sx, cache.srad, control_spans(cache), cache.fps, types, provisional=not inp.final
    )
    # the columns the motion-type fit gates say which camera the fit assumed, and from where
    # (docs/methods.md#known-intrinsics): WorldMark's 70° unless the model or the case stated it
    camera = camera_of(cache.meta).to_json()
    for name in FIT_GATED:
        result = results.get(name)
        if result is not None:
            results[name] = replace(result, details={**result.details, "camera": camera})
    return results


FIT_GATED = (
    "direction_accuracy_trans",
    "direction_accuracy_rot",
    "direction_purity_trans",
    "direction_purity_rot",
)
"""The control columns that the motion-type fit weighs (``p_trans``/``p_yaw``)."""

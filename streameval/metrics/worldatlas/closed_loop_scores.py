"""The closed-loop memory metrics of a memory_loop episode, as the metric registry calls them.

Revisit fidelity, geometric closure, rendering recovery and memory half-life
(docs/methods.md#memory_revisit_fidelity … #memory_half_life) read the ≤ 24 revisit pairs of
the return gate's pose track (docs/methods.md#memory_return_gate) and nothing but the episode
cache: the paired frames (kept as lossless PNG, ``cache/closed_loop/``), their intrinsics, and
what the appearance and Gram backends answered for each pair at episode end. Networks are not
re-run here, so a live run, its replay and ``rescore`` score the same arrays bit for bit.

A failed gate does not block these metrics: they use the nearest-pose fallback pairs and say so
(``pair_source``, ``gate_passed``). A missing input or backend is ``not_applicable`` with the
reason, never a zero (docs/methods.md#statuses).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from streameval.core.arrays import F64, Image
from streameval.core.episode.closed_loop import ClosedLoopFrames
from streameval.core.metric_result import MetricResult
from streameval.errors import PoseTrackError
from streameval.metrics.registry import ScoringInput
from streameval.metrics.worldatlas.closed_loop import (
    ClosedLoopResult,
    geometric_closure,
    memory_half_life,
    rendering_recovery,
    revisit_fidelity,
)
from streameval.metrics.worldatlas.constants import MAX_SCORED_PAIRS
from streameval.metrics.worldatlas.pose_distance import as_pose_track
from streameval.metrics.worldatlas.revisit import (
    PairSource,
    ReturnGate,
    return_gate,
    scoring_pairs,
    select_diverse_pairs,
)
from streameval.protocol.memory_loop import MEMORY_LOOP_SUITE

CLOSED_LOOP_METRICS = (
    "memory_revisit_fidelity",
    "memory_geometric_closure",
    "memory_rendering_recovery",
    "memory_half_life",
)


def closed_loop_pairs(gate: ReturnGate, poses: F64) -> tuple[F64, PairSource]:
    """The pairs the closed-loop metrics score: the strict revisit pairs, else the nearest-pose
    fallback, thinned to ``MAX_SCORED_PAIRS`` spread over time gaps (rows of ``PAIR_COLUMNS``).
    The one selection, used when the frames are kept and when they are scored."""
    pairs, source = scoring_pairs(gate, poses)
    return select_diverse_pairs(pairs, max_pairs=MAX_SCORED_PAIRS), source


def _result(outcome: ClosedLoopResult, details: dict[str, Any]) -> MetricResult:
    merged = {**details, **outcome.details}
    if outcome.status == "official" and outcome.value is not None:
        return MetricResult.official(outcome.value, outcome.value, merged)
    return MetricResult.not_applicable(outcome.reason or "not measurable", merged)


def _all(make: Any, reason: str, details: dict[str, Any]) -> dict[str, MetricResult]:
    return {name: make(reason, dict(details)) for name in CLOSED_LOOP_METRICS}


def score_closed_loop(
    poses: F64 | None,
    *,
    fps: float,
    pose_source: str,
    kept: ClosedLoopFrames | None,
    pose_problem: str | None = None,
) -> dict[str, MetricResult]:
    """The four closed-loop metrics of one episode from its pose track and kept frames."""
    base: dict[str, Any] = {"pose_source": pose_source}
    if pose_problem is not None:
        return _all(MetricResult.missing, f"unusable sidecar: {pose_problem}", base)
    if poses is None:
        reason = "no pose track (the model sent none and no estimator ran)"
        return _all(MetricResult.not_applicable, reason, base)
    try:
        track = as_pose_track(poses)
    except PoseTrackError as exc:
        return _all(MetricResult.missing, f"pose track unusable: {exc}", base)
    gate = return_gate(track, fps=fps)
    pairs, source = closed_loop_pairs(gate, track)
    base.update(
        gate_passed=gate.passed,
        gate_failure_reason=gate.failure_reason,
        pair_source=source,
        pair_count=len(pairs),
    )
    if len(pairs) == 0:
        return _all(MetricResult.not_applicable, "no revisit pair to score", base)
    if kept is None:
        reason = "the cache keeps no revisit frames (cache/closed_loop/ absent: an older cache)"
        return _all(MetricResult.not_applicable, reason, base)
    wanted = pairs[:, :2].astype(np.int64)
    if kept.pairs.shape != wanted.shape or not np.array_equal(kept.pairs, wanted):
        reason = "the revisit frames in the cache are not the pairs of this pose track"
        return _all(MetricResult.missing, reason, base)
    absent = sorted({int(i) for i in wanted.ravel()} - set(kept.frames))
    if absent:
        reason = f"frames {absent[:5]} of the revisit pairs were not received"
        return _all(MetricResult.missing, reason, base)
    base["frame_side"] = kept.frame_side
    first = [kept.frames[int(i)] for i in wanted[:, 0]]
    revisit = [kept.frames[int(j)] for j in wanted[:, 1]]
    gaps = [float(g) for g in pairs[:, 5]]
    results: dict[str, MetricResult] = {}
    fidelity = _fidelity(kept, first, revisit, base)
    results["memory_revisit_fidelity"] = fidelity
    results["memory_geometric_closure"] = _closure(kept, track, wanted, first, revisit, base)
    results["memory_rendering_recovery"] = _result(
        rendering_recovery(
            first,
            revisit,
            gram_distances=None if kept.gram is None else [float(g) for g in kept.gram],
            gram_backend=kept.gram_backend,
        ),
        {**base, "gram_problem": kept.gram_problem} if kept.gram_problem else base,
    )
    results["memory_half_life"] = _half_life(fidelity, gaps, base)
    return results


def _fidelity(
    kept: ClosedLoopFrames, first: list[Image], revisit: list[Image], base: dict[str, Any]
) -> MetricResult:
    if kept.features is None:
        reason = kept.feature_problem or "no appearance backend (embedding off)"
        status = MetricResult.missing if kept.feature_problem else MetricResult.not_applicable
        return status(reason, {**base, "feature_backend": None})
    outcome = revisit_fidelity(
        first,
        revisit,
        list(kept.features[:, 0]),
        list(kept.features[:, 1]),
        feature_backend=str(kept.feature_backend),
    )
    return _result(outcome, base)


def _closure(
    kept: ClosedLoopFrames,
    poses: F64,
    wanted: NDArray[np.int64],
    first: list[Image],
    revisit: list[Image],
    base: dict[str, Any],
) -> MetricResult:
    outcome = geometric_closure(
        first,
        revisit,
        [poses[int(i)] for i in wanted[:, 0]],
        [poses[int(j)] for j in wanted[:, 1]],
        [kept.intrinsics.get(int(i)) for i in wanted[:, 0]],
        [kept.intrinsics.get(int(j)) for j in wanted[:, 1]],
    )
    return _result(outcome, base)


def _half_life(fidelity: MetricResult, gaps: list[float], base: dict[str, Any]) -> MetricResult:
    if fidelity.status != "official":
        reason = f"no revisit fidelity to fit: {fidelity.reason}"
        return MetricResult.not_applicable(reason, {**base, "reason_code": "no_fidelity"})
    per_pair = [float(p["score"]) for p in fidelity.details["per_pair"]]
    return _result(memory_half_life(gaps, per_pair), {**base, "gap_seconds": gaps})


def closed_loop_scores(inp: ScoringInput) -> dict[str, MetricResult]:
    """Registry kernel: the four closed-loop metrics of a memory_loop episode from its cache."""
    cache = inp.cache
    suite = cache.meta.get("suite")
    if suite != MEMORY_LOOP_SUITE:
        reason = f"defined for memory_loop trajectories, not the {suite} suite"
        return _all(MetricResult.not_applicable, reason, {})
    atlas = cache.worldatlas
    if atlas is None:
        reason = "no WorldAtlas cache (cache/worldatlas.npz): poses were not kept"
        return _all(MetricResult.missing, reason, {})
    return score_closed_loop(
        atlas.poses,
        fps=cache.fps,
        pose_source=atlas.pose_source,
        kept=atlas.closed_loop,
        pose_problem=atlas.problems.get("poses"),
    )

"""One memory_loop episode's WorldAtlas results, with WorldAtlas's statuses
(docs/methods.md#statuses).

Missing inputs are ``not_applicable`` with the reason (a model that sends no pose, a rollout
without depth); inputs that exist but cannot be used (NaN poses, wrong shapes, zero focal
lengths) are ``missing``. Nothing is imputed. Normalized values stay on WorldAtlas's own
[0, 1] scale (docs/methods.md#worldatlas-scale).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streameval.core.metric_result import MetricResult
from streameval.errors import (
    CloudError,
    DepthInputError,
    IntrinsicsError,
    KeystrokeInputError,
    PoseTrackError,
)
from streameval.metrics.worldatlas.constants import MAX_SCORED_PAIRS
from streameval.metrics.worldatlas.keystroke import keystroke_errors
from streameval.metrics.worldatlas.pose_distance import as_pose_track
from streameval.metrics.worldatlas.publication import MEMORY_LOOP_NORMALIZATION
from streameval.metrics.worldatlas.revisit import (
    ReturnGate,
    choose_split,
    return_gate,
    scoring_pairs,
    select_diverse_pairs,
)
from streameval.metrics.worldatlas.scene_f1 import DepthSidecar, scene_f1_on_split

WORLDATLAS_METRICS = ("memory_return_gate", "keystroke_natet", "keystroke_nater", "memory_scene_f1")


@dataclass(frozen=True, slots=True)
class MemoryLoopInputs:
    """What an episode offers: a pose track (or why there is none), keys, fps, depth."""

    poses: NDArray[np.floating] | None
    pose_source: str  # "model", "vipe_sidecar", "cpu_estimator", or "none"
    frame_keys: Sequence[str]
    fps: float
    depth: DepthSidecar | None = None
    pose_problem: str | None = None  # why poses are None/unusable, from the loader
    depth_problem: str | None = None  # a sidecar that exists but cannot be read
    translation_scale_known: bool = True  # False for scale-free estimates (nATEt not comparable)


def _normalized(name: str, raw: float) -> float:
    return MEMORY_LOOP_NORMALIZATION[name](raw)


def _unavailable_all(status: str, reason: str, details: dict[str, Any]) -> dict[str, MetricResult]:
    make = MetricResult.missing if status == "missing" else MetricResult.not_applicable
    return {name: make(reason, dict(details)) for name in WORLDATLAS_METRICS}


def gate_details(gate: ReturnGate, poses: NDArray[np.floating]) -> dict[str, Any]:
    pairs, pair_source = scoring_pairs(gate, poses)
    diverse = select_diverse_pairs(pairs, max_pairs=MAX_SCORED_PAIRS)
    return {
        "gate_passed": gate.passed,
        "gate_failure_reason": gate.failure_reason,
        "departed": gate.departed,
        "returned": gate.returned,
        "departure_distance": gate.departure_distance,
        "required_departure_distance": gate.required_departure_distance,
        "translation_extent": gate.translation_extent,
        "rotation_extent_degrees": gate.rotation_extent_degrees,
        "scale_is_degenerate": gate.scale_is_degenerate,
        "min_gap_frames": gate.min_gap_frames,
        "turnaround_index": gate.turnaround_index,
        "revisit_pair_count": len(gate.pairs),
        "pair_source": pair_source,
        "scored_pairs": [[int(p[0]), int(p[1]), float(p[2])] for p in diverse],
    }


def score_memory_loop(inputs: MemoryLoopInputs) -> dict[str, MetricResult]:
    """All four WorldAtlas metrics of one episode."""
    base: dict[str, Any] = {"pose_source": inputs.pose_source}
    if inputs.poses is None:
        reason = inputs.pose_problem or "no pose track (the model sent none and no estimator ran)"
        status = "missing" if inputs.pose_problem else "not_applicable"
        return _unavailable_all(status, reason, base)
    try:
        poses = as_pose_track(inputs.poses)
    except PoseTrackError as exc:
        return _unavailable_all("missing", f"pose track unusable: {exc}", base)
    gate = return_gate(poses, fps=inputs.fps)
    gdetails = {**base, **gate_details(gate, poses)}
    results = {
        "memory_return_gate": MetricResult.official(
            float(gate.passed), _normalized("memory_return_gate", float(gate.passed)), gdetails
        )
    }
    results.update(_keystroke(poses, inputs, base))
    results["memory_scene_f1"] = _scene(poses, gate, inputs, gdetails)
    return results


def _keystroke(
    poses: NDArray[np.floating], inputs: MemoryLoopInputs, base: dict[str, Any]
) -> dict[str, MetricResult]:
    try:
        k = keystroke_errors(poses, inputs.frame_keys, fps=inputs.fps)
    except KeystrokeInputError as exc:
        return {
            "keystroke_natet": MetricResult.missing(str(exc), dict(base)),
            "keystroke_nater": MetricResult.missing(str(exc), dict(base)),
        }
    details = {
        **base,
        "ate_t": k.ate_t,
        "path_length": k.path_length,
        "shape_t": k.shape_t,
        "activity_t": k.activity_t,
        "n_active": k.n_active,
        "n_mismatch": k.n_mismatch,
        "ate_r_degrees": k.ate_r_degrees,
        "total_rotation_degrees": k.total_rotation_degrees,
        "observed_intervals": k.observed_intervals,
        "missing_intervals": k.missing_intervals,
        "amplitude_calibrated": False,
    }
    if not k.translation_applicable:
        natet = MetricResult.not_applicable("no translation commanded nor observed", details)
    elif not inputs.translation_scale_known:
        natet = MetricResult.not_applicable(
            "the pose source has no translation scale, so the 0.06 units/s activity threshold "
            "cannot be applied",
            details,
        )
    else:
        natet = MetricResult.official(k.natet, _normalized("keystroke_natet", k.natet), details)
    nater = MetricResult.official(k.nater, _normalized("keystroke_nater", k.nater), details)
    return {"keystroke_natet": natet, "keystroke_nater": nater}


def _scene(
    poses: NDArray[np.floating],
    gate: ReturnGate,
    inputs: MemoryLoopInputs,
    gdetails: dict[str, Any],
) -> MetricResult:
    details = {
        "pose_source": inputs.pose_source,
        "gate_passed": gate.passed,
        "gate_failure_reason": gate.failure_reason,
        "pair_source": gdetails["pair_source"],
        "common_visibility_conditioned": False,
        "estimator_independence_verified": False,
    }
    if inputs.depth_problem:
        return MetricResult.missing(f"depth sidecar unusable: {inputs.depth_problem}", details)
    if inputs.depth is None:
        return MetricResult.not_applicable(
            "no depth (depth_metric.npy, depth_valid_mask.npz and intrinsics.npy are needed)",
            details,
        )
    try:
        inputs.depth.check(len(poses))
    except DepthInputError as exc:
        return MetricResult.missing(f"depth sidecar unusable: {exc}", details)
    split, why = choose_split(gate, poses)
    if split is None:
        return MetricResult.not_applicable(why or "no split", details)
    details.update(
        {
            "split_source": split.source,
            "measurement_scope": "temporal_halves_point_cloud_overlap"
            if split.source == "temporal_midpoint_fallback"
            else "revisit_episode_point_cloud_overlap",
            "episode": list(split.episode) if split.episode else None,
            "outbound_frames": [split.outbound.start, split.outbound.stop],
            "return_frames": [split.revisit.start, split.revisit.stop],
        }
    )
    try:
        scored = scene_f1_on_split(poses, inputs.depth, split.outbound, split.revisit)
    except IntrinsicsError as exc:
        return MetricResult.missing(f"intrinsics cannot be projected: {exc}", details)
    except CloudError as exc:
        return MetricResult.not_applicable(f"insufficient depth support: {exc}", details)
    overlap = scored.score.overlap
    details.update(
        {
            **overlap.to_json(),
            **scored.score.alignment,
            "observation_point_count": scored.score.observation_points,
            "revisit_point_count": scored.score.revisit_points,
            "scene_diagonal": scored.score.scene_diagonal,
            "outbound_sampled_frames": scored.outbound_frames,
            "return_sampled_frames": scored.return_frames,
            # WorldAtlas's leaderboard task value: 0 for a valid-input gate failure.
            "task_value": overlap.f1 if gate.passed else 0.0,
        }
    )
    return MetricResult.official(overlap.f1, _normalized("memory_scene_f1", overlap.f1), details)

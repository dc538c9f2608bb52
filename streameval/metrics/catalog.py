"""The built-in metrics, registered once (``registry.py`` explains every field).

One ``register_metric`` call per metric, in the order of the master table of WorldMark:
control (docs/methods.md#control-metrics), memory (docs/methods.md#memory-metrics), quality
(docs/methods.md#quality-metrics); then the WorldAtlas memory_loop metrics
(docs/methods.md#worldatlas-memory_loop-metrics), scored and shown only for memory_loop episodes;
then the wall-time interactivity figures (no benchmark defines them: own units, no columns;
docs/methods.md#interactivity); last WorldAtlas's real-time axis on its [0, 1] scale
(docs/methods.md#real-time-metrics). A new metric adds its kernel module and one call here.
Each column names its model-level aggregation by the function itself (``aggregation.py``,
beside the metrics), so the import graph holds every dependency of a column's value.
"""

from __future__ import annotations

from streameval.metrics.aggregation import (
    episode_mean,
    global_memory,
    local_memory,
    pooled_segments,
    pooled_signed_segments,
    scene_task_score,
    unit_episode_mean,
)
from streameval.metrics.registry import MetricSpec, register_metric

# Each family's episode adapter, beside its kernels (metrics/<family>/). The control columns'
# target is also what the engine's provisional scores recognise (engine/provisional.py updates
# those columns incrementally instead of calling it), hence public.
CONTROL_KERNEL = "streameval.metrics.control.episode:control_scores"
_MEMORY_KERNEL = "streameval.metrics.memory.episode:memory_scores"
_QUALITY_KERNEL = "streameval.metrics.quality.episode:quality_scores"
_WORLDATLAS_KERNEL = "streameval.metrics.worldatlas.scores:worldatlas_scores"
_LOOPS = ("memory_loop",)  # = protocol.memory_loop.MEMORY_LOOP_SUITE (kept import-free here)
_UNIT = 1.0  # WorldAtlas metrics keep their [0, 1] scale (docs/methods.md#worldatlas-scale)

_CONTROL = {
    "direction_accuracy": (
        "Direction Accuracy",
        "Acc",
        "does the world move the commanded way, with the right motion type?",
        pooled_signed_segments,
    ),
    "direction_purity": (
        "Direction Purity",
        "Pur",
        "is the motion confined to the commanded axis?",
        pooled_segments,
    ),
    "motion_stability": (
        "Motion Stability",
        "Stab",
        "once moving, is the speed steady (no hiccups, no decay)?",
        pooled_segments,
    ),
    "response_latency": (
        "Response Latency",
        "Lat",
        "how fast does the model respond after a key switch?",
        pooled_segments,
    ),
}
_CONTROL_STATUS = (
    "not_applicable when the episode has no scored segment of the pool (e.g. no L/R key for "
    "rot); provisional while the episode runs"
)

for _metric, (_label, _short, _question, _aggregation) in _CONTROL.items():
    for _pool, _pool_label, _pool_short in (("trans", "trans", "T"), ("rot", "rot", "R")):
        register_metric(
            MetricSpec(
                name=f"{_metric}_{_pool}",
                label=f"{_label} ({_pool_label})",
                short=f"{_short} {_pool_short}",
                family="control",
                kernel=CONTROL_KERNEL,
                aggregation=_aggregation,
                live=True,
                description=_question,
                status_rules=_CONTROL_STATUS,
            )
        )

register_metric(
    MetricSpec(
        name="local_memory",
        label="Local Memory",
        short="Local",
        family="memory",
        kernel=_MEMORY_KERNEL,
        aggregation=local_memory,
        description="no abrupt frame-to-frame mutations or hard cuts",
        status_rules="not_applicable: frozen; missing: cut detector failed or memory off",
    )
)
register_metric(
    MetricSpec(
        name="revisit_memory",
        label="Revisit Memory",
        short="Revisit",
        family="memory",
        kernel=_MEMORY_KERNEL,
        # final_master: the mean of the episodes' C2, not a pool of pair distances
        aggregation=episode_mean,
        description="leave a view and come back (A→D, L→R, W→S): is it the same?",
        status_rules="not_applicable: no reversal in the schedule or no kept pair",
    )
)
register_metric(
    MetricSpec(
        name="global_memory",
        label="Global Memory",
        short="Global",
        family="memory",
        kernel=_MEMORY_KERNEL,
        aggregation=global_memory,
        description="is the whole trajectory's geometry consistent (pose + depth)?",
        status_rules="not_applicable: frozen or too few views; missing: no pose + depth",
    )
)
register_metric(
    MetricSpec(
        name="perceptual_quality",
        label="Perceptual Quality",
        short="Percep",
        family="quality",
        kernel=_QUALITY_KERNEL,
        description="Q-Align (OneAlign) quality score",
        status_rules="not_applicable without a Q-Align backend "
        "(docs/methods.md#perceptual_quality)",
    )
)
register_metric(
    MetricSpec(
        name="aesthetic_quality",
        label="Aesthetic Quality",
        short="Aesth",
        family="quality",
        kernel=_QUALITY_KERNEL,
        description="Q-Align (OneAlign) aesthetic score",
        status_rules="not_applicable without a Q-Align backend (docs/methods.md#aesthetic_quality)",
    )
)
for _name, _label, _what in (
    ("rollout_imaging_drift", "Rollout imaging drift", "Q-Align quality, else CPU sharpness"),
    ("rollout_aesthetic_drift", "Rollout aesthetic drift", "Q-Align aesthetics"),
):
    register_metric(
        MetricSpec(
            name=_name,
            label=_label,
            family="quality",
            kernel=_QUALITY_KERNEL,
            column=False,  # WorldAtlas rollout drift, not a master-table column
            description=f"(best − worst)/|best| over 10 segments of ≤ 300 frames ({_what})",
            status_rules="not_applicable: fewer than 10 frames, or no backend for the task",
        )
    )
for _name, _label in (
    ("imaging_sharpness", "Imaging sharpness"),
    ("imaging_noise", "Imaging noise"),
    ("imaging_exposure", "Imaging exposure"),
    ("imaging_clipping", "Imaging clipping"),
    ("imaging_colourfulness", "Imaging colourfulness"),
    ("temporal_flicker", "Temporal flicker"),
):
    register_metric(
        MetricSpec(
            name=_name,
            label=_label,
            family="quality",
            kernel=_QUALITY_KERNEL,
            column=False,  # a CPU statistic in its own unit (metrics/quality/imaging.py)
            description="CPU imaging statistic, never under the Q-Align names "
            "(docs/methods.md#imaging-statistics)",
            status_rules="missing: no frame measured",
        )
    )

register_metric(
    MetricSpec(
        name="memory_return_gate",
        label="Return Gate (pass rate)",
        short="Gate",
        family="worldatlas",
        kernel=_WORLDATLAS_KERNEL,
        description="did the camera leave and come back (WorldAtlas return gate)? a diagnostic",
        status_rules="not_applicable: no pose track; missing: poses unusable (NaN, shapes)",
        suites=_LOOPS,
        scale=_UNIT,
        aggregation=unit_episode_mean,
    )
)
for _name, _label, _short, _what in (
    ("keystroke_natet", "Keystroke nATEt", "nATEt", "translation"),
    ("keystroke_nater", "Keystroke nATEr", "nATEr", "rotation"),
):
    register_metric(
        MetricSpec(
            name=_name,
            label=_label,
            short=_short,
            family="worldatlas",
            kernel=_WORLDATLAS_KERNEL,
            description=f"does the camera's {_what} follow the keys (WorldAtlas)? 1 − raw",
            status_rules="not_applicable: no translation commanded nor observed (nATEt), a "
            "scale-free pose source (nATEt), no pose track; missing: poses unusable",
            suites=_LOOPS,
            scale=_UNIT,
            aggregation=unit_episode_mean,
        )
    )
register_metric(
    MetricSpec(
        name="memory_scene_f1",
        label="Memory Scene F1 (task)",
        short="SceneF1",
        family="worldatlas",
        kernel=_WORLDATLAS_KERNEL,
        # WorldAtlas's task score (docs/methods.md#memory_scene_f1): 0 for a gate failure, else
        # the cloud F1; coverage k/N
        aggregation=scene_task_score,
        description="outbound/return point-cloud overlap after a revisit (WorldAtlas)",
        status_rules="not_applicable: no depth or no cloud support; missing: depth or "
        "intrinsics unusable; any unmeasured episode leaves the full-suite score null",
        suites=_LOOPS,
        scale=_UNIT,
        unmeasured_is_missing=True,
    )
)
_CLOSED_LOOP_KERNEL = "streameval.metrics.worldatlas.closed_loop_scores:closed_loop_scores"
_CLOSED_LOOP_RULES = (
    "computed after a failed gate too (nearest-pose fallback pairs, pair_source); "
    "not_applicable: no pose track, no revisit pair"
)
for _name, _label, _short, _what, _rules in (
    (
        "memory_revisit_fidelity",
        "Revisit Fidelity",
        "Fidel",
        "does a revisited viewpoint look as it first did (appearance features + SSIM)?",
        "; no appearance backend",
    ),
    (
        "memory_geometric_closure",
        "Geometric Closure",
        "Closure",
        "do the revisit frames' SIFT matches obey the geometry the poses imply?",
        "; no intrinsics or no pair with 12 SIFT matches",
    ),
    (
        "memory_rendering_recovery",
        "Rendering Recovery",
        "Render",
        "is a revisited viewpoint lit, coloured and textured as before (CIELAB + Gram)?",
        "",
    ),
    (
        "memory_half_life",
        "Memory Half-life",
        "HalfLife",
        "how long revisit fidelity survives: exponential half-life / 60 s",
        "; fewer than 5 pairs, no measurable decay or an unreliable fit (R² < 0.3)",
    ),
):
    register_metric(
        MetricSpec(
            name=_name,
            label=_label,
            short=_short,
            family="worldatlas",
            kernel=_CLOSED_LOOP_KERNEL,
            description=f"{_what} (WorldAtlas)",
            status_rules=_CLOSED_LOOP_RULES + _rules,
            suites=_LOOPS,
            scale=_UNIT,
            aggregation=unit_episode_mean,
        )
    )

# Wall-time interactivity (metrics/interactivity.py): measured by the pipeline from
# arrival times and key sends and written in scores.json's own ``interactivity`` block (not under
# ``metrics``: they describe the session, not the world, and no benchmark normalises them).
# Registered here so the dashboard and report take labels, units and direction from one place.
for _name, _label, _short, _unit, _higher, _what in (
    ("delivered_fps", "Delivered fps", "fps", "fps", True, "frames over the wall span of arrivals"),
    ("jitter_ms_p50", "Jitter p50", "jitter p50", "ms", False, "median |Δt − 1/fps| of arrivals"),
    ("jitter_ms_p95", "Jitter p95", "p95", "ms", False, "95th percentile of |Δt − 1/fps|"),
    ("frames_dropped", "Frames dropped", "dropped", "frames", False, "perception behind: skipped"),
    ("frames_missing", "Frames missing", "missing", "frames", False, "server indices never seen"),
    ("stalls", "Stalls", "stalls", "count", False, "gaps over 3 nominal frame intervals"),
    ("stall_seconds", "Stall time", "stalled", "s", False, "wall time inside those gaps"),
    (
        "key_to_response_ms_median",
        "Key-to-response latency (median)",
        "key→response",
        "ms",
        False,
        "keydown → first frame moving the commanded way, wall time",
    ),
    (
        "key_to_response_ms_max",
        "Key-to-response latency (max)",
        "max",
        "ms",
        False,
        "the slowest key's response, wall time",
    ),
    # the server's own figures, when its chunks report them (docs/serve-formats.md#chunks)
    ("server_generation_ms", "Server generation", "gen", "ms", False, "per chunk, median"),
    ("server_control_latency_ms", "Server control latency", "ctrl", "ms", False, "median"),
    ("server_queue_depth", "Server queue depth", "queue", "count", False, "deepest queue"),
    ("server_dropped_frames", "Server dropped frames", "srv drop", "frames", False, "total"),
):
    register_metric(
        MetricSpec(
            name=_name,
            label=_label,
            short=_short,
            family="interactivity",
            kernel=None,  # measured by the pipeline (pipeline.Episode.interactivity)
            column=False,
            higher_is_better=_higher,
            unit=_unit,
            description=_what,
            status_rules="absent: no frames (fps, jitter) or no key response measured",
        )
    )

# WorldAtlas's real-time axis (metrics/worldatlas/realtime.py,
# docs/methods.md#real-time-metrics): scored from the cache's frame arrival times and action
# changes, on WorldAtlas's [0, 1] scale, and no master-table columns (they rate the serving,
# like the interactivity figures above).
_REALTIME_KERNEL = "streameval.metrics.worldatlas.realtime_scores:realtime_scores"
for _name, _label, _short, _unit, _what, _rules in (
    (
        "effective_generation_fps",
        "Effective generation fps",
        "gen fps",
        "fps",
        "frames per wall second of a served model, against its nominal fps",
        "not_applicable: in-process run, or a replay without a recorded live session",
    ),
    (
        "realtime_factor",
        "Realtime factor",
        "RTF",
        "x",
        "seconds of video per second of wall time (1 keeps pace)",
        "not_applicable: in-process run, or a replay without a recorded live session",
    ),
    (
        "action_response_latency",
        "Action response latency",
        "act lat",
        "s",
        "action change to the first frame moving its way, 1 − raw / budget (WorldAtlas)",
        "not_applicable: no action change, or not a live session",
    ),
    (
        "latency_budget_pass_rate",
        "Latency budget pass rate",
        "budget",
        "",
        "share of action changes answered within --latency-budget (WorldAtlas)",
        "not_applicable: no action change, or not a live session",
    ),
):
    register_metric(
        MetricSpec(
            name=_name,
            label=_label,
            short=_short,
            family="realtime",
            kernel=_REALTIME_KERNEL,
            column=False,
            unit=_unit,
            description=_what,
            status_rules=_rules + "; missing: a cache without frame times",
            scale=_UNIT,
            aggregation=unit_episode_mean,
        )
    )

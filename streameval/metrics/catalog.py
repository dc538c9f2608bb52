"""The built-in metrics, registered once (``registry.py`` explains every field).

One ``register_metric`` call per metric, in the order of the master table of seed 000:
control (SPEC §4), memory (SPEC §5), quality (SPEC §6). A new metric adds its kernel module and
one call here.
"""

from __future__ import annotations

from streameval.metrics.registry import MetricSpec, register_metric

_CONTROL_KERNEL = "streameval.episode_scores:control_scores"  # = episode_scores.CONTROL_KERNEL
_MEMORY_KERNEL = "streameval.episode_scores:memory_scores"
_QUALITY_KERNEL = "streameval.episode_scores:quality_scores"
_AGG = "streameval.leaderboard.aggregators"

_CONTROL = {
    "direction_accuracy": (
        "Direction Accuracy",
        "Acc",
        "does the world move the commanded way, with the right motion type?",
        f"{_AGG}:pooled_signed_segments",
    ),
    "direction_purity": (
        "Direction Purity",
        "Pur",
        "is the motion confined to the commanded axis?",
        f"{_AGG}:pooled_segments",
    ),
    "motion_stability": (
        "Motion Stability",
        "Stab",
        "once moving, is the speed steady (no hiccups, no decay)?",
        f"{_AGG}:pooled_segments",
    ),
    "response_latency": (
        "Response Latency",
        "Lat",
        "how fast does the model respond after a key switch?",
        f"{_AGG}:pooled_segments",
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
                kernel=_CONTROL_KERNEL,
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
        aggregation=f"{_AGG}:local_memory",
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
        aggregation=f"{_AGG}:episode_mean",
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
        aggregation=f"{_AGG}:global_memory",
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
        status_rules="not_applicable without a Q-Align backend (SPEC §6)",
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
        status_rules="not_applicable without a Q-Align backend (SPEC §6)",
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
            column=False,  # seed 004, not a master-table column
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
            column=False,  # a CPU statistic in its own unit (metrics/imaging.py), no column
            description="CPU imaging statistic, never under the Q-Align names (SPEC §6)",
            status_rules="missing: no frame measured",
        )
    )

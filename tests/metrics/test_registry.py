"""The metric registry: built-in specs, one registration per metric, clear errors."""

from __future__ import annotations

import pytest

from streameval.errors import UnknownMetricError
from streameval.metrics.registry import (
    MetricSpec,
    metric_names,
    metric_spec,
    metric_specs,
    register_metric,
    registered,
    resolve_target,
)

DESIGN_COLUMNS = (
    "direction_accuracy_trans",
    "direction_accuracy_rot",
    "direction_purity_trans",
    "direction_purity_rot",
    "motion_stability_trans",
    "motion_stability_rot",
    "response_latency_trans",
    "response_latency_rot",
    "local_memory",
    "revisit_memory",
    "global_memory",
    "perceptual_quality",
    "aesthetic_quality",
)
# WorldAtlas: columns of memory_loop results only, after WorldMark's master table.
WORLDATLAS_COLUMNS = (
    "memory_return_gate",
    "keystroke_natet",
    "keystroke_nater",
    "memory_scene_f1",
    "memory_revisit_fidelity",
    "memory_geometric_closure",
    "memory_rendering_recovery",
    "memory_half_life",
)


def test_builtin_metrics_in_design_order_with_resolvable_targets() -> None:
    assert metric_names(column=True) == DESIGN_COLUMNS + WORLDATLAS_COLUMNS
    assert metric_names(family="worldatlas") == WORLDATLAS_COLUMNS
    for name in WORLDATLAS_COLUMNS:
        spec = metric_spec(name)
        assert spec.suites == ("memory_loop",)
        assert spec.applies_to("memory_loop") and not spec.applies_to("worldmark")
        assert spec.scale == 1.0 and spec.decimals == 4  # WorldAtlas's own [0, 1]
    assert metric_spec("memory_scene_f1").unmeasured_is_missing
    assert all(metric_spec(n).applies_to("worldmark") for n in DESIGN_COLUMNS)
    assert metric_names(live=True) == DESIGN_COLUMNS[:8] == metric_names(family="control")
    for spec in metric_specs():
        assert spec.label and spec.header
        # registered beside the metrics: a function of metrics/aggregation.py, never a string
        assert spec.aggregation.__module__ == "streameval.metrics.aggregation"
        if spec.family == "interactivity":  # metadata of figures the pipeline measures
            assert spec.kernel is None and not spec.column and spec.unit
            continue
        assert spec.higher_is_better
        assert spec.kernel is not None and callable(resolve_target(spec.kernel))


def test_every_episode_adapter_sits_beside_its_family_kernels() -> None:
    """Each built-in kernel target is ``streameval.metrics.<family>.<module>:<fn>`` (the
    real-time metrics are WorldAtlas's: ``metrics/worldatlas/``), never the engine's."""
    folder = {"realtime": "worldatlas"}
    for spec in metric_specs():
        if spec.kernel is None:
            continue
        module = spec.kernel.split(":")[0]
        family = folder.get(spec.family, spec.family)
        assert module.startswith(f"streameval.metrics.{family}."), (spec.name, spec.kernel)


def test_a_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_metric(metric_spec("local_memory"))
    with pytest.raises(ValueError, match="snake_case"):
        register_metric(MetricSpec("bad name", "Bad", "quality", None))


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownMetricError, match="did you mean 'local_memory'"):
        metric_spec("local_memroy")


def test_registered_is_undone_after_the_block() -> None:
    spec = MetricSpec("toy_x", "Toy X", "worldatlas", None, column=False)
    with registered(spec):
        assert metric_spec("toy_x") is spec
        assert "toy_x" not in metric_names(column=True)
    assert "toy_x" not in metric_names()

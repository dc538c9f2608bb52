"""The metric registry: one spec per metric, read by everything that names a metric.

In the spirit of lm-evaluation-harness's ``register_metric`` (one entry carries what the table,
the logger and the aggregation need) and torchmetrics' functional/stateful split (the kernel is
a pure function; the registry only says how to call it and how to aggregate its results). The
scores writer (``engine.scoring.score_episode``), ``rescore``, ``streameval table``, the
dashboard's live panel and leaderboard all read these specs, so adding a metric is **its kernel
module + one registration** — no column list, label map or aggregator table to edit elsewhere.

A complete example — a quality metric that is a master-table column, and a WorldAtlas
metric defined only for the memory_loop suite (``catalog.py`` registers the real ones)::

    # streameval/metrics/quality/sharpness.py (new) — the kernel: pure numpy, no I/O
    def sharpness(laplacian_var: FloatArray) -> MetricResult: ...

    # the episode adapter (in the same module): the cache -> {metric name: MetricResult}
    def sharpness_scores(inp: ScoringInput) -> dict[str, MetricResult]:
        return {"sharpness": sharpness(inp.cache.extra["laplacian_var"])}

    # streameval/metrics/catalog.py — one call each
    register_metric(
        MetricSpec(
            name="sharpness",                       # snake_case, stable (docs/methods.md)
            label="Sharpness",                       # table / dashboard header
            short="Sharp",                           # narrow header
            family="quality",                        # control | memory | quality | worldatlas | …
            kernel="streameval.metrics.quality.sharpness:sharpness_scores",
            aggregation=episode_mean,               # metrics/aggregation.py
            higher_is_better=True,
            description="Laplacian variance of the frame, normalised to [0, 100]",
        )
    )
    register_metric(
        MetricSpec(
            name="memory_return_gate",
            label="Memory return gate",
            family="worldatlas",
            kernel="streameval.metrics.worldatlas.scores:worldatlas_scores",
            suites=("memory_loop",),                 # scored and shown for loops only
            description="share of loops whose camera left and came back (WorldAtlas return gate)",
        )
    )

Kernels are lazy ``"module:attr"`` strings, as the backend registry's, so this module imports
nothing heavy and ``streameval table`` never imports a kernel's dependencies. Aggregations are
the functions themselves (``metrics/aggregation.py``: pure arithmetic, cheap to import), so the
import graph, and with it the layer contracts, sees every column's aggregation. Several specs
may name the same kernel (``control_metrics`` scores all eight control columns at once): it
runs once per episode and each spec takes its own entry.

Contracts a registration promises:

- ``kernel(inp: ScoringInput) -> Mapping[str, MetricResult]`` (``ScoringInput`` below), the
  family's episode adapter beside its kernels (``metrics/<family>/``):
  a pure function of the episode cache; a metric it cannot compute is ``not_applicable`` or
  ``missing`` with a reason, never a made-up number. A kernel that leaves a registered name out
  makes that metric ``missing`` (naming the kernel). ``kernel=None`` registers metadata only:
  a figure produced elsewhere, in its own block of ``scores.json`` (the ``interactivity``
  figures, family ``interactivity``, are measured by the pipeline from arrival times and
  written under ``interactivity``; views read their label, unit and direction here).
- ``aggregation(measured: Sequence[MetricResult], n_missing: int) -> Aggregate``
  (``streameval.metrics.aggregation``): the model-level value over the official episodes
  and its bounds with ``n_missing`` episodes at their worst / best
  (docs/methods.md#model-aggregation-and-coverage).
- ``suites=("memory_loop",)``: the kernel runs only for episodes of those suites, and the
  metric is a table column only when the results hold such episodes (coverage counts them
  alone: 479/480 memory_loop episodes, whatever else the model ran).
- ``live=True``: the kernel is also run on the prefix while the episode runs (provisional
  values, ``ScoringInput.final`` False); otherwise it runs once, at episode end.
- Columns are in [0, 100], higher is better (WorldMark, docs/methods.md#scales-and-rounding); a
  raw-lower-is-better quantity is normalised before it becomes a column. ``higher_is_better`` is
  what views read. ``column=False`` metrics keep their own ``unit`` (ms, fps, frames…) and
  direction.

Order is registration order: it is the order of ``scores.json``'s metrics and of the table's
columns.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from streameval.core.episode.cache import EpisodeCache
from streameval.core.episode.motion import MotionFit
from streameval.core.registry import Registry, load_target
from streameval.errors import UnknownMetricError
from streameval.metrics.aggregation import Aggregator, episode_mean

_CATALOG = "streameval.metrics.catalog"


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """Everything the rest of streameval needs to know about one metric (module docstring).

    ``status_rules`` says in one line when the metric is ``not_applicable`` or ``missing``
    (shown in help and docs; the kernel implements it). ``suites`` names the suites whose
    episodes the metric is defined for (empty: every suite): the WorldAtlas metrics exist only
    for memory_loop trajectories, so a worldmark episode neither gets them in ``scores.json``
    nor counts against their coverage in the table. ``unmeasured_is_missing``: a
    not_applicable episode counts against the column's coverage and bounds like a missing one
    (WorldAtlas's scene task score, docs/methods.md#model-aggregation-and-coverage: its full-suite
    value is null unless every episode is measured). ``unit``: the unit of a value that is no 0–100
    column (``ms``, ``fps``); empty for columns.
    """

    name: str
    label: str
    family: str
    kernel: str | None
    short: str = ""
    aggregation: Aggregator = episode_mean
    higher_is_better: bool = True
    column: bool = True
    live: bool = False
    description: str = ""
    status_rules: str = ""
    suites: tuple[str, ...] = ()
    unmeasured_is_missing: bool = False
    unit: str = ""
    scale: float = 100.0
    """The top of the normalized value: 100 for WorldMark's 0–100 columns, 1 for WorldAtlas's
    [0, 1] metrics (docs/methods.md#worldatlas-scale), which keep their published scale."""

    def applies_to(self, suite: str) -> bool:
        """Whether episodes of ``suite`` are scored on this metric."""
        return not self.suites or suite in self.suites

    @property
    def decimals(self) -> int:
        """Decimals a value is shown (and ranked) with: 2 on 0–100, 4 on [0, 1] ("0.8450")."""
        return 2 if self.scale >= 100.0 else 4

    @property
    def header(self) -> str:
        """The narrow header: ``short``, else the label."""
        return self.short or self.label


@dataclass(frozen=True, slots=True)
class ScoringInput:
    """What an episode kernel registered here receives (``engine.scoring.score_episode``
    builds it; ``metrics/<family>/`` adapters read it).

    ``cache``: the episode cache (signals, samples, memory); ``motion_fits``: the motion-type
    fit of every lat/yaw segment, computed once and shared (control needs it, ``scores.json``
    reports it); ``final``: False while the episode runs (provisional scores of ``live``
    metrics on the prefix).
    """

    cache: EpisodeCache
    motion_fits: Mapping[int, MotionFit | None]
    final: bool


# The metrics, in registration order: one ``Registry`` like the backends', holding specs.
METRICS: Registry[MetricSpec] = Registry("metric", error=UnknownMetricError, lazy=False)
_lock = threading.Lock()
_catalog_loaded = False


def _ensure_catalog() -> None:
    """Register the built-in metrics on first use (lazily: importing the registry stays free)."""
    global _catalog_loaded
    if _catalog_loaded:
        return
    with _lock:
        if _catalog_loaded:
            return
        _catalog_loaded = True
    importlib.import_module(_CATALOG)


def register_metric(spec: MetricSpec, *, replace: bool = False) -> MetricSpec:
    """Register ``spec`` (module docstring). A second registration of the same name is an
    error unless ``replace``: two definitions of one metric are what the registry prevents."""
    _ensure_catalog()
    if not spec.name or spec.name != spec.name.strip() or " " in spec.name:
        raise ValueError(f"metric name must be snake_case without spaces, got {spec.name!r}")
    METRICS.register(spec.name, spec, replace=replace)
    return spec


def unregister_metric(name: str) -> MetricSpec:
    """Remove ``name`` (tests that register a toy metric clean up with this)."""
    _ensure_catalog()
    removed = METRICS.unregister(name)
    assert isinstance(removed, MetricSpec)
    return removed


@contextmanager
def registered(spec: MetricSpec) -> Iterator[MetricSpec]:
    """``spec`` registered for the duration of a ``with`` block."""
    register_metric(spec)
    try:
        yield spec
    finally:
        unregister_metric(spec.name)


def metric_spec(name: str) -> MetricSpec:
    """The spec of ``name``; ``UnknownMetricError`` with the known names otherwise."""
    _ensure_catalog()
    return METRICS.get(name)


def metric_specs(
    *, family: str | None = None, column: bool | None = None, live: bool | None = None
) -> tuple[MetricSpec, ...]:
    """Registered specs in registration order, optionally filtered."""
    _ensure_catalog()
    return tuple(
        s
        for s in METRICS.values()
        if (family is None or s.family == family)
        and (column is None or s.column == column)
        and (live is None or s.live == live)
    )


def metric_names(
    *, family: str | None = None, column: bool | None = None, live: bool | None = None
) -> tuple[str, ...]:
    """Names of ``metric_specs(...)``."""
    return tuple(s.name for s in metric_specs(family=family, column=column, live=live))


def resolve_target(target: str) -> Callable[..., Any]:
    """Import and return ``"package.module:attr"`` (a kernel)."""
    found: Callable[..., Any] = load_target(target)
    return found

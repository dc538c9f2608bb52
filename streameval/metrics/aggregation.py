"""Model-level aggregation of one column over a model's episodes
(docs/methods.md#model-aggregation-and-coverage).

Aggregation (WorldMark's final reporting, docs/methods.md#model-aggregation-and-coverage), one
function per column, registered beside its metric: ``MetricSpec.aggregation`` holds the function
itself (``metrics/catalog.py``; default: the episode mean), so what defines a column's value
lives in the metrics layer with the kernel that scores its episodes, and the import-linter
contracts see every use of it. The leaderboard (``leaderboard/cells.py``) only calls it; the
formulas are pure arithmetic over ``MetricResult`` values, no I/O:

- control columns pool the *scored segments of all the model's episodes* (read from
  ``details["segments"]``): accuracy ``100·max(0, mean)``, purity / stability / latency
  ``100·mean``. If any measured episode lacks usable segment details the whole column falls back
  to the mean of the episodes' ``normalized`` values (``Cell.method`` says which was used): mixing
  the two weightings in one number would weight episodes inconsistently.
- ``local_memory`` = ``100·(1 − share of episodes with a cut)·(1 − mean mutation rate)``;
  ``revisit_memory`` = the mean of the episodes' ``100/(1 + mean d)`` (final_master's mean of C2:
  the episode mean, registered in ``metrics/catalog.py``);
  ``global_memory`` = ``100/(1 + mean(e)/TAU_G)``; quality columns = mean of episode values.
  The memory columns fall back to the episode mean in the same way as the control columns.

Bounds (docs/methods.md#model-aggregation-and-coverage, only for partial cells): let M be the
measured episodes, X the missing ones,
N' = |M| + |X| (not_applicable episodes are left out — they are never imputed). Each bound is the
column's own formula evaluated with every missing episode at its worst / best possible value:

- episode-mean columns: exactly WorldAtlas's, ``[Σv/N', (Σv + 100·|X|)/N']``;
- pooled control columns: each missing episode is assumed to carry as many scored segments as a
  measured episode does on average (``S/|M|``), scoring 0 / 1 (accuracy −1 / 1, then
  ``max(0, ·)``); for purity, stability and latency this reduces to WorldAtlas's bounds formula
  applied to
  the column value;
- ``local_memory``: missing episodes with a cut and mutation rate 1 / without a cut and rate 0
  (the mean mutation rate skips ``None`` — a cut that left no countable pair — as
  ``local_memory`` below does);
- ``revisit_memory``: an episode mean, so WorldAtlas's bounds formula above;
- ``global_memory``: lower bound 0 (``e`` has no upper limit), upper with ``e = 0``;
- ``memory_scene_f1`` (WorldAtlas's leaderboard task score, memory_loop): the mean of the
  episodes' task values ``T_i`` — 0 after a valid-input gate failure, else the conditional cloud
  F1 (``details["task_value"]``, set by the kernel) — with exactly WorldAtlas's bounds
  ``[ΣT/N, (ΣT + N − |M|)/N]``. Its not_applicable episodes count as missing
  (``MetricSpec.unmeasured_is_missing``), so coverage below N leaves the cell partial: the
  full-suite score stays null.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from streameval.constants import TAU_G
from streameval.core.metric_result import MetricResult
from streameval.inputs.numbers import finite_float

PERCENT = 100.0  # master-table scale (WorldMark: columns normalised to [0, 100])
UNIT = 1.0  # WorldAtlas's scale: its metrics stay on [0, 1] (docs/methods.md#worldatlas-scale)


@dataclass(frozen=True, slots=True)
class Aggregate:
    """What an aggregator returns: the column value over the measured episodes and its bounds
    with ``n_missing`` episodes at their worst / best (equal to ``value`` when none is missing).
    ``n_units`` counts what was pooled (segments, pairs or episodes).
    """

    value: float
    lower: float
    upper: float
    method: str
    n_units: int


# measured: the official results of the model's episodes (finite normalized), never empty.
Aggregator = Callable[[Sequence[MetricResult], int], Aggregate]


def episode_mean(measured: Sequence[MetricResult], n_missing: int) -> Aggregate:
    """Mean of the episodes' normalized values; bounds exactly as WorldAtlas's."""
    return _episode_mean(measured, n_missing, PERCENT)


def unit_episode_mean(measured: Sequence[MetricResult], n_missing: int) -> Aggregate:
    """The episode mean of a WorldAtlas metric, on [0, 1]: a missing episode at 0 / 1."""
    return _episode_mean(measured, n_missing, UNIT)


def _episode_mean(measured: Sequence[MetricResult], n_missing: int, top: float) -> Aggregate:
    values = [float(m.normalized) for m in measured if m.normalized is not None]
    total = math.fsum(values)
    n_all = len(values) + n_missing
    return Aggregate(
        total / len(values),
        total / n_all,
        (total + top * n_missing) / n_all,
        "episode_mean",
        len(values),
    )


def _fallback(measured: Sequence[MetricResult], n_missing: int) -> Aggregate:
    return replace(episode_mean(measured, n_missing), method="episode_mean_fallback")


def scored_segment_values(result: MetricResult, low: float = -1.0) -> list[float] | None:
    """The values of the scored segments in ``details["segments"]``; None when unusable.

    Unusable = no segment list, an entry that is not an object, a scored entry without a finite
    value or outside ``[low, 1]`` (a file edited by hand: a latency segment of −1 once made the
    column −100), or no scored entry at all (an official episode always has one).
    """
    segments = result.details.get("segments")
    if not isinstance(segments, list):
        return None
    values: list[float] = []
    for entry in segments:
        if not isinstance(entry, dict):
            return None
        if entry.get("status") != "scored":
            # not_applicable and dropped segments are never averaged in (docs/methods.md#statuses)
            continue
        value = finite_float(entry.get("value"))
        if value is None or not low <= value <= 1.0:
            return None
        values.append(value)
    return values or None


def _pooled_segments(signed: bool) -> Aggregator:
    """Pool the scored segments of all episodes (WorldMark: "pool of W/S/A/D segments").

    ``signed``: segment values lie in [−1, 1] and the column is ``100·max(0, mean)``
    (direction accuracy); otherwise they lie in [0, 1] and the column is ``100·mean``.
    """
    worst = -1.0 if signed else 0.0

    def column(raw_mean: float) -> float:
        return PERCENT * max(0.0, raw_mean) if signed else PERCENT * raw_mean

    def aggregate(measured: Sequence[MetricResult], n_missing: int) -> Aggregate:
        per_episode = [scored_segment_values(m, worst) for m in measured]
        pooled: list[float] = []
        for values in per_episode:
            if values is None:
                return _fallback(measured, n_missing)
            pooled.extend(values)
        total, n = math.fsum(pooled), len(pooled)
        unknown = n_missing * n / len(measured)  # segments assumed for the missing episodes
        return Aggregate(
            column(total / n),
            column((total + worst * unknown) / (n + unknown)),
            column((total + unknown) / (n + unknown)),
            "pooled_segments",
            n,
        )

    return aggregate


def local_memory(measured: Sequence[MetricResult], n_missing: int) -> Aggregate:
    """``100·(1 − share of episodes with a cut)·(1 − mean mutation rate)``
    (docs/methods.md#memory-metrics).

    The mean mutation rate skips ``None`` (an episode whose hard cut left no countable pair, as
    ``metrics.memory.local_memory`` writes it) and is 0 when no episode has a rate.
    """
    cuts: list[float] = []
    rates: list[float] = []
    for m in measured:
        cut, rate = m.details.get("hard_cut"), m.details.get("mutation_rate")
        finite_rate = finite_float(rate)
        if (
            cut not in (True, False, 0, 1)
            or "mutation_rate" not in m.details
            or (rate is not None and finite_rate is None)
        ):
            return _fallback(measured, n_missing)
        cuts.append(float(bool(cut)))
        if finite_rate is not None:
            rates.append(finite_rate)
    n, n_rates = len(measured), len(rates)
    n_all = n + n_missing
    c, r = math.fsum(cuts), math.fsum(rates)

    def formula(cut_share: float, rate_sum: float, rate_count: int) -> float:
        mean_rate = rate_sum / rate_count if rate_count else 0.0
        return PERCENT * (1.0 - cut_share) * (1.0 - mean_rate)

    return Aggregate(
        formula(c / n, r, n_rates),
        # worst: every missing episode has a cut and mutation rate 1; best: neither.
        formula((c + n_missing) / n_all, r + n_missing, n_rates + n_missing),
        formula(c / n_all, r, n_rates + n_missing),
        "episode_cut_share_and_mean_mutation_rate",
        n,
    )


def global_memory(measured: Sequence[MetricResult], n_missing: int) -> Aggregate:
    """``100/(1 + mean(e)/TAU_G)`` over the episodes' geometry errors
    (docs/methods.md#global_memory)."""
    errors: list[float] = []
    for m in measured:
        e = finite_float(m.details.get("e"))
        if e is None:
            return _fallback(measured, n_missing)
        errors.append(e)
    total, n = math.fsum(errors), len(errors)

    def formula(mean_e: float) -> float:
        return PERCENT / (1.0 + mean_e / TAU_G)

    value = formula(total / n)
    # e has no upper limit: with a missing episode the column can get arbitrarily close to 0.
    lower = 0.0 if n_missing else value
    return Aggregate(value, lower, formula(total / (n + n_missing)), "mean_e", n)


def scene_task_score(measured: Sequence[MetricResult], n_missing: int) -> Aggregate:
    """WorldAtlas's task mean over the measured episodes (module docstring), on [0, 1].

    Never the conditional F1 in place of ``T_i`` (WorldAtlas,
    docs/methods.md#model-aggregation-and-coverage: not to be mixed with conditional
    means): an official episode without a task value (a file from another version) makes the
    value NaN, which ``cells.model_cell`` reports as missing.
    """
    values: list[float] = []
    for m in measured:
        task = finite_float(m.details.get("task_value"))
        if task is None or not 0.0 <= task <= 1.0:
            return Aggregate(math.nan, math.nan, math.nan, "task_score", len(measured))
        values.append(task)
    total, n_all = math.fsum(values), len(values) + n_missing
    return Aggregate(
        total / len(values),
        total / n_all,
        (total + UNIT * n_missing) / n_all,
        "task_score",
        len(values),
    )


# Registered in ``metrics/catalog.py`` (``MetricSpec.aggregation``).
pooled_signed_segments: Aggregator = _pooled_segments(signed=True)
pooled_segments: Aggregator = _pooled_segments(signed=False)

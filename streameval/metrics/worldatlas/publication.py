"""WorldAtlas's normalization families and reducers (docs/methods.md#worldatlas-scale), and its
leaderboard task score (docs/methods.md#memory_scene_f1).

Every headline value is a normalized score in [0, 1]; not_applicable and missing results are
never imputed, and an aggregate says how many episodes it covers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MinMax:
    """Direct (bounded) or empirical min/max scaling, reversed when lower is better, clamped."""

    lower: float
    upper: float
    higher_is_better: bool = True

    def __call__(self, value: float) -> float:
        span = self.upper - self.lower
        if not math.isfinite(value) or span == 0.0:
            raise ValueError(f"cannot normalize {value} on [{self.lower}, {self.upper}]")
        unit = (value - self.lower) / span
        unit = unit if self.higher_is_better else 1.0 - unit
        return min(max(unit, 0.0), 1.0)


@dataclass(frozen=True, slots=True)
class ZScore:
    """A z-score against benchmark statistics, mapped onto a configured sub-interval of [0, 1].

    z in [-z_clip, z_clip] maps linearly onto [out_lower, out_upper] (reversed when lower is
    better) and is clamped outside it.
    """

    mean: float
    std: float
    z_clip: float = 3.0
    out_lower: float = 0.0
    out_upper: float = 1.0
    higher_is_better: bool = True

    def __call__(self, value: float) -> float:
        if not math.isfinite(value) or self.std <= 0.0:
            raise ValueError(f"cannot z-normalize {value} with std {self.std}")
        z = (value - self.mean) / self.std
        z = z if self.higher_is_better else -z
        unit = (min(max(z, -self.z_clip), self.z_clip) + self.z_clip) / (2.0 * self.z_clip)
        return self.out_lower + unit * (self.out_upper - self.out_lower)


def geometric_mean(values: Sequence[float]) -> float:
    """camera_error's reducer: rotation and translation normalized apart, then combined."""
    if not values or any(v < 0.0 for v in values):
        raise ValueError(f"geometric mean needs non-negative values, got {list(values)}")
    if any(v == 0.0 for v in values):
        return 0.0
    return math.exp(sum(math.log(v) for v in values) / len(values))


def arithmetic_mean(values: Sequence[float]) -> float:
    """motion_smoothness's reducer (MSE, SSIM, LPIPS normalized apart)."""
    if not values:
        raise ValueError("arithmetic mean of no component")
    return sum(values) / len(values)


# WorldAtlas's normalization of the memory_loop metrics, bounded, nATE reversed
# (docs/methods.md#worldatlas-scale).
MEMORY_LOOP_NORMALIZATION: dict[str, MinMax] = {
    "memory_return_gate": MinMax(0.0, 1.0, True),
    "memory_scene_f1": MinMax(0.0, 1.0, True),
    "keystroke_natet": MinMax(0.0, 1.0, False),
    "keystroke_nater": MinMax(0.0, 1.0, False),
}


@dataclass(frozen=True, slots=True)
class TaskScore:
    """WorldAtlas's leaderboard memory_scene_f1 over N episodes
    (docs/methods.md#memory_scene_f1)."""

    measured: int  # |M|: measured returns plus zero-valued gate failures
    total: int  # N
    task_sum: float

    @property
    def mean(self) -> float | None:
        """S_task over the measured episodes (None when none is measured)."""
        return self.task_sum / self.measured if self.measured else None

    @property
    def complete(self) -> bool:
        return self.measured == self.total and self.total > 0

    @property
    def full_suite(self) -> float | None:
        """The full-suite score: null unless every episode is measured."""
        return self.mean if self.complete else None

    @property
    def bounds(self) -> tuple[float, float] | None:
        """[sum T / N, (sum T + N - |M|) / N]: what the missing episodes could make of it."""
        if self.total == 0:
            return None
        return self.task_sum / self.total, (self.task_sum + self.total - self.measured) / self.total

    @property
    def coverage(self) -> str:
        return f"{self.measured}/{self.total}"


@dataclass(frozen=True, slots=True)
class EpisodeTask:
    """What one episode contributes: the gate and the conditional F1, each maybe unavailable."""

    gate_passed: bool | None  # None: gate not measurable (missing poses, backend failure)
    scene_f1: float | None  # None: not measurable
    valid_inputs: bool = True  # False: missing sidecar or backend failure (never a zero)


def task_value(episode: EpisodeTask) -> float | None:
    """T_i: 0 for a valid-input gate failure, F_i for a passed gate with F1, else unavailable."""
    if not episode.valid_inputs or episode.gate_passed is None:
        return None
    if not episode.gate_passed:
        return 0.0
    return episode.scene_f1


def task_score(episodes: Sequence[EpisodeTask]) -> TaskScore:
    values = [task_value(e) for e in episodes]
    measured = [v for v in values if v is not None]
    return TaskScore(len(measured), len(episodes), float(sum(measured)))

"""Anytime-valid confidence sequences (docs/methods.md#anytime-valid-intervals): coverage at
every n by simulation, against a loop-by-loop reference written here and against the authors'
``confseq`` package where it imports, exactness at the last case, nesting, bad input, and the
verdict and width rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

import streameval
from streameval.errors import BadInputError
from streameval.metrics.anytime import (
    BET_TRUNCATION,
    GRID_STEPS,
    confidence_sequence,
    confidence_sequences,
    decide,
    fixed_n_interval,
    width_met,
)


def bimodal_population(size: int, share_high: float, seed: int) -> np.ndarray:
    """A direction-accuracy-like column on [0, 1]: most cases 1 (100 points), the rest 0."""
    values = np.zeros(size)
    values[: round(size * share_high)] = 1.0
    return np.random.default_rng(seed).permutation(values)


def orders(population: np.ndarray, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(population) for _ in range(count)])


def covered_at_every_n(low: np.ndarray, high: np.ndarray, mean: float) -> np.ndarray:
    """Per order: whether [low, high] held the full-set mean after every case."""
    tolerance = 1e-12
    return np.all((low <= mean + tolerance) & (mean - tolerance <= high), axis=1)


def reference_unit_sequence(x: list[float], population: int, alpha: float) -> tuple[list, list]:
    """The hedged betting sequence without replacement, one candidate and one case at a time
    in plain Python (the definition in docs/methods.md#anytime-valid-intervals)."""
    half = alpha / 2
    lows: list[float] = []
    highs: list[float] = []
    grid = [i / GRID_STEPS for i in range(GRID_STEPS + 1)]
    # bets: predictable mixture from the cases before, one pseudo-case at mean 1/2, var 1/4
    bets = []
    total, spread, var_before = 0.0, 0.0, 0.25
    for t, value in enumerate(x, start=1):
        bets.append(math.sqrt(2 * math.log(1 / half) / (t * math.log(1 + t) * var_before)))
        total += value
        mean = min((0.5 + total) / (t + 1), 1.0)
        spread += (value - mean) ** 2
        var_before = (0.25 + spread) / (t + 1)
    capital_up = [1.0] * len(grid)
    capital_down = [1.0] * len(grid)
    seen = 0.0
    run_low, run_high = 0.0, 1.0
    for t, value in enumerate(x, start=1):
        inside = []
        for j, m in enumerate(grid):
            m_t = (population * m - seen) / (population - t + 1)
            if not 0.0 <= m_t <= 1.0:
                inside.append(False)
                continue
            up = min(bets[t - 1], BET_TRUNCATION / m_t) if m_t > 0 else bets[t - 1]
            down = min(bets[t - 1], BET_TRUNCATION / (1 - m_t)) if m_t < 1 else bets[t - 1]
            capital_up[j] *= 1 + up * (value - m_t)
            capital_down[j] *= 1 - down * (value - m_t)
            inside.append(max(capital_up[j], capital_down[j]) / 2 < 1 / alpha)
        seen += value
        members = [m for m, keep in zip(grid, inside, strict=True) if keep]
        low = max(0.0, members[0] - 1 / GRID_STEPS) if members else 0.0
        high = min(1.0, members[-1] + 1 / GRID_STEPS) if members else 1.0
        low = max(low, seen / population)
        high = min(high, (seen + population - t) / population)
        run_low, run_high = max(run_low, low), min(run_high, high)
        lows.append(run_low)
        highs.append(run_high)
    return lows, highs


def test_covers_the_full_set_mean_at_every_n() -> None:
    population = bimodal_population(50, 0.8, seed=1)
    low, high = confidence_sequences(orders(population, 300, seed=2), 50)
    coverage = covered_at_every_n(low, high, float(population.mean())).mean()
    assert coverage >= 0.93


def test_the_fixed_n_interval_fails_the_same_simulation() -> None:
    """The same check on mean ± 1.96·s/√n: looked at after every case it misses far more than
    5 % of orders, so the simulation above can fail."""
    population = bimodal_population(50, 0.8, seed=1)
    runs = orders(population, 300, seed=2)
    low, high = fixed_n_interval(runs, 50)
    coverage = covered_at_every_n(low[:, 1:], high[:, 1:], float(population.mean())).mean()
    assert coverage < 0.85


def test_skewed_scores_are_covered_too() -> None:
    population = np.random.default_rng(3).beta(5.0, 1.5, 60)
    low, high = confidence_sequences(orders(population, 200, seed=4), 60)
    assert covered_at_every_n(low, high, float(population.mean())).mean() >= 0.93


def test_matches_the_loop_reference() -> None:
    rng = np.random.default_rng(5)
    x = rng.beta(2.0, 5.0, 14)
    expected_low, expected_high = reference_unit_sequence(list(x), 20, 0.05)
    low, high = confidence_sequence(x, 20)
    np.testing.assert_allclose(low, expected_low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(high, expected_high, rtol=0, atol=1e-12)


def test_matches_the_confseq_package_where_it_imports() -> None:
    try:
        from confseq.betting import hedged_cs
    except (ImportError, AttributeError) as err:  # 0.0.11 uses np.float_, gone in numpy 2
        pytest.skip(f"confseq does not import here: {err}")
    rng = np.random.default_rng(6)
    population = bimodal_population(80, 0.7, seed=7)
    x = rng.permutation(population)[:50]
    ours = confidence_sequence(x, 80)
    theirs = hedged_cs(x, alpha=0.05, N=80, breaks=GRID_STEPS, running_intersection=True)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)


def test_batch_rows_equal_single_calls() -> None:
    runs = orders(np.random.default_rng(8).random(30), 5, seed=9)[:, :20]
    low, high = confidence_sequences(runs, 30)
    for row, (row_low, row_high) in enumerate(zip(low, high, strict=True)):
        single_low, single_high = confidence_sequence(runs[row], 30)
        np.testing.assert_array_equal(row_low, single_low)
        np.testing.assert_array_equal(row_high, single_high)


def test_exact_at_the_last_case() -> None:
    population = np.random.default_rng(10).beta(2.0, 2.0, 40) * 100
    low, high = confidence_sequence(population, 40, bounds=(0.0, 100.0))
    exact = math.fsum(population) / 40
    assert low[-1] == high[-1] == exact
    reordered_low, _ = confidence_sequence(population[::-1], 40, bounds=(0.0, 100.0))
    assert reordered_low[-1] == exact


def test_intervals_are_nested_and_narrow() -> None:
    population = bimodal_population(125, 0.8, seed=11)
    x = np.random.default_rng(12).permutation(population)
    low, high = confidence_sequence(x, 125)
    assert np.all(np.diff(low) >= 0)
    assert np.all(np.diff(high) <= 0)
    assert np.all(low <= high)
    width = high - low
    assert width[0] > 0.9  # one case says little
    assert width[62] < 0.3  # half the cases: within ±15 points of 100


def test_a_miss_keeps_the_last_interval_then_ends_exact() -> None:
    """A sorted order is not random: the sequence closes in on 1 and then misses when the zeros
    come. The running intersection would be empty; the last non-empty interval is kept (never
    low > high) and the last case still gives the exact mean."""
    x = np.r_[np.ones(60), np.zeros(40)]
    low, high = confidence_sequence(x, 100)
    assert np.all(low <= high)
    assert low[-2] > 0.6  # missed
    assert low[70] == low[98] and high[70] == high[98]  # kept
    assert low[-1] == high[-1] == 0.6


def test_rescaled_by_bounds() -> None:
    x = np.random.default_rng(13).random(25)
    unit_low, unit_high = confidence_sequence(x, 40)
    low, high = confidence_sequence(100 * x, 40, bounds=(0.0, 100.0))
    np.testing.assert_allclose(low, 100 * unit_low, atol=1e-9)
    np.testing.assert_allclose(high, 100 * unit_high, atol=1e-9)
    # paired differences on (-1, 1): the same sequence on (d + 1) / 2
    d = 2 * x - 1
    diff_low, diff_high = confidence_sequence(d, 40, bounds=(-1.0, 1.0))
    np.testing.assert_allclose(diff_low, 2 * unit_low - 1, atol=1e-12)
    np.testing.assert_allclose(diff_high, 2 * unit_high - 1, atol=1e-12)


def test_constant_column_narrows_to_its_value() -> None:
    low, high = confidence_sequence(np.full(100, 0.42), 100)
    assert np.all((low <= 0.42) & (high >= 0.42))
    assert high[49] - low[49] < 0.12
    assert low[-1] == high[-1] == pytest.approx(0.42, abs=1e-15)


def test_empty_values_give_empty_intervals() -> None:
    low, high = confidence_sequence([], 10)
    assert low.shape == high.shape == (0,)


def test_exported_from_the_package() -> None:
    assert streameval.confidence_sequence is confidence_sequence
    assert "confidence_sequence" in streameval.__all__


@pytest.mark.parametrize(
    ("values", "population", "kwargs", "line"),
    [
        (
            [0.5, 1.2],
            10,
            {},
            "confidence_sequence: value 1.2 at case 2 is outside bounds (0.0, 1.0)",
        ),
        (
            [0.5, -0.1],
            10,
            {},
            "confidence_sequence: value -0.1 at case 2 is outside bounds (0.0, 1.0)",
        ),
        (
            [math.nan],
            10,
            {},
            "confidence_sequence: value nan at case 1 is outside bounds (0.0, 1.0)",
        ),
        (
            [50.0, 101.0],
            10,
            {"bounds": (0.0, 100.0)},
            "confidence_sequence: value 101.0 at case 2 is outside bounds (0.0, 100.0)",
        ),
        (
            [0.1, 0.2, 0.3],
            2,
            {},
            "population: 2 cases is fewer than the 3 values given (or below 1)",
        ),
        ([0.1], 0, {}, "population: 0 cases is fewer than the 1 values given (or below 1)"),
        ([0.1], 2.5, {}, "population: must be a whole number of cases, got 2.5"),
        ([0.1], 5, {"confidence": 1.0}, "confidence: must be between 0 and 1 (exclusive), got 1.0"),
        (
            [0.1],
            5,
            {"bounds": (1.0, 0.0)},
            "bounds: must be finite with low < high, got (1.0, 0.0)",
        ),
        ([[0.1]], 5, {}, "confidence_sequence: values must be 1-D, got shape (1, 1)"),
    ],
)
def test_bad_input(values: list, population: int, kwargs: dict, line: str) -> None:
    with pytest.raises(BadInputError) as err:
        confidence_sequence(values, population, **kwargs)
    assert str(err.value) == line


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (1.5, 4.0, "better"),  # whole interval above +margin
        (-4.0, -1.5, "worse"),  # whole interval below -margin
        (-0.5, 0.8, "within"),  # inside [-margin, +margin]
        (-1.0, 1.0, "within"),  # the band's edges count as within
        (0.5, 3.0, "undecided"),  # straddles +margin
        (-3.0, 0.2, "undecided"),  # straddles -margin
        (1.0, 2.0, "undecided"),  # low == +margin is not above it
        (2.5, 2.5, "better"),  # every case seen: one point
        (0.7, 0.7, "within"),
    ],
)
def test_decide(low: float, high: float, verdict: str) -> None:
    assert decide(low, high, 1.0) == verdict


def test_decide_refuses_bad_input() -> None:
    with pytest.raises(BadInputError, match="--margin: must be a finite number"):
        decide(0.0, 1.0, -1.0)
    with pytest.raises(BadInputError, match=r"decide: interval \[2.0, 1.0\] is not an interval"):
        decide(2.0, 1.0, 1.0)


def test_width_met() -> None:
    assert width_met(85.0, 89.0, 4.0)
    assert not width_met(85.0, 89.5, 4.0)
    assert width_met(87.3, 87.3, 0.0)
    with pytest.raises(BadInputError, match="width_met"):
        width_met(math.nan, 1.0, 4.0)


def test_a_planted_defect_is_decided_before_half_the_cases() -> None:
    """Paired per-case differences (points) of two models on a direction-accuracy-like column
    over 80 cases: the clean model scores 100 on 90 % of them, the defective one loses a
    third of those to 0. Decided ``worse`` before half the cases; at the last case the verdict
    is never undecided."""
    rng = np.random.default_rng(14)
    clean = (rng.random(80) < 0.9).astype(float) * 100
    defect = clean * (rng.random(80) >= 1 / 3)
    diffs = rng.permutation(defect - clean)
    low, high = confidence_sequence(diffs, 80, bounds=(-100.0, 100.0))
    verdicts = [decide(lo, hi, 1.0) for lo, hi in zip(low, high, strict=True)]
    assert verdicts.index("worse") < 40
    assert verdicts[-1] == "worse"

"""``ratio_confidence_sequence``: a pooled column's full-set value (a ratio of per-case sums)
covered at every n, by simulation; the same numbers as ``confidence_sequence`` when every case
counts once; the exact value at the last case; bad input refused."""

from __future__ import annotations

import numpy as np
import pytest

from streameval.errors import BadInputError
from streameval.metrics.anytime import confidence_sequence, ratio_confidence_sequence


def test_one_unit_per_case_is_the_mean_sequence() -> None:
    rng = np.random.default_rng(3)
    values = rng.random(40)
    low, high = ratio_confidence_sequence(values, np.ones(40), 50)
    mean_low, mean_high = confidence_sequence(values, 50)
    # candidates every 0.0005 and the mean's grid every 0.001: the same interval to a step
    assert np.all(np.abs(low - mean_low) <= 1.5e-3)
    assert np.all(np.abs(high - mean_high) <= 1.5e-3)


def test_pooled_ratio_covered_at_every_case_over_random_orders() -> None:
    """A direction-accuracy-like population: cases with 0 to 3 scored segments (0: the
    column does not apply), segment values near +1 or −1 (bimodal). Over 300 random orders the
    interval must hold the pooled full-set value at every n in at least 95 % of them."""
    rng = np.random.default_rng(7)
    size = 40
    segments = rng.integers(0, 4, size).astype(float)
    good = rng.random(size) < 0.7
    numerators = np.where(good, 0.9, -0.6) * segments
    truth = numerators.sum() / segments.sum()
    misses = 0
    orders = 300
    for _ in range(orders):
        order = rng.permutation(size)
        low, high = ratio_confidence_sequence(
            numerators[order], segments[order], size, bounds=(-1.0, 1.0), max_denominator=3
        )
        misses += bool(np.any((low > truth + 1e-12) | (high < truth - 1e-12)))
    assert misses / orders <= 0.05
    # and it is not the trivial interval by the half-way point
    low, high = ratio_confidence_sequence(
        numerators, segments, size, bounds=(-1.0, 1.0), max_denominator=3
    )
    assert high[size // 2] - low[size // 2] < 1.5
    assert low[-1] == high[-1] == pytest.approx(truth)


def test_nothing_measured_yet_is_the_whole_range_and_nested_after() -> None:
    low, high = ratio_confidence_sequence(
        [0, 0, 2.0, 1.5, 0], [0, 0, 2, 2, 1], 8, max_denominator=2
    )
    assert (low[0], high[0]) == (0.0, 1.0) and (low[1], high[1]) == (0.0, 1.0)
    assert np.all(np.diff(low) >= 0) and np.all(np.diff(high) <= 0)


@pytest.mark.parametrize(
    ("numerators", "denominators", "population", "options"),
    [
        ([1.5], [1], 3, {}),  # A above bounds[1]·B
        ([0.5], [3], 3, {"max_denominator": 2}),  # B above the most a case can have
        ([0.5, 0.5], [1, 1], 1, {}),  # more cases than the population
        ([0.5], [1, 1], 3, {}),  # lengths differ
    ],
)
def test_bad_input_is_refused(
    numerators: list[float], denominators: list[float], population: int, options: dict[str, float]
) -> None:
    with pytest.raises(BadInputError):
        ratio_confidence_sequence(numerators, denominators, population, **options)  # type: ignore[arg-type]


def test_the_certain_range_is_where_the_unseen_cases_can_take_the_ratio() -> None:
    """Against brute force: every unseen case at its least or most (B at 0 or at the top,
    A at lo·B or hi·B), the extremes of the full-set ratio."""
    import itertools

    from streameval.metrics.anytime import certain_ratio_range

    rng = np.random.default_rng(5)
    size, top = 7, 3
    b = rng.integers(0, 4, 5).astype(float)
    a = b * rng.uniform(-1, 1, 5)
    low, high = certain_ratio_range(a, b, size, bounds=(-1.0, 1.0), max_denominator=top)
    for n in range(1, 6):
        options = [(0.0, 0.0)] + [(x * k, float(k)) for k in range(1, top + 1) for x in (-1, 1)]
        ratios = []
        for unseen in itertools.product(options, repeat=size - n):
            total_b = b[:n].sum() + sum(u[1] for u in unseen)
            if total_b > 0:
                ratios.append((a[:n].sum() + sum(u[0] for u in unseen)) / total_b)
        assert low[n - 1] == pytest.approx(min(ratios)) and high[n - 1] == pytest.approx(
            max(ratios)
        )


def test_the_interval_lies_within_the_certain_range_after_38_of_40() -> None:
    """38 cases holding 25 translation segments (at most 3 a case), pooled value 0.9628: the
    last two cases can add 0 to 6 segments, each anywhere in [-1, 1] (a reversed key is -1),
    so the full-set value lies in [(24.07 - 6)/31, (24.07 + 6)/31 capped by 1] = [0.5829,
    0.97] for certain; with [0, 1] segments (stability, purity) in [0.7765, 0.97]."""
    from streameval.leaderboard.intervals import _within
    from streameval.metrics.anytime import certain_ratio_range

    b = np.zeros(38)
    b[:25] = 1.0
    a = 0.9628 * b
    for bounds, expected in (((-1.0, 1.0), 0.58290), ((0.0, 1.0), 0.77645)):
        seq = ratio_confidence_sequence(a, b, 40, bounds=bounds, max_denominator=3)
        cert = certain_ratio_range(a, b, 40, bounds=bounds, max_denominator=3)
        low, high = _within(seq, cert)
        assert cert[0][-1] == pytest.approx(expected, abs=1e-4)
        assert cert[1][-1] == pytest.approx(0.97)
        assert np.all(low >= cert[0] - 1e-12) and np.all(high <= cert[1] + 1e-12)
        assert np.all(low >= seq[0] - 1e-12) and np.all(high <= seq[1] + 1e-12)
        assert high[-1] == pytest.approx(0.97)  # the sequence's grid rounded it out to 0.9705


def test_a_narrower_range_than_the_certain_one_would_miss_two_reversed_cases() -> None:
    """Why direction accuracy's certain range after 38 of 40 is [58.29, 97.0] and not the
    [77.65, 97.0] of [0, 1] segments: the last two cases of this very run can be a world whose
    keys are reversed, 3 translation segments each at -1 (WorldMark's direction accuracy per
    segment is signed; only the pooled column is clipped at 0). The full set then scores
    58.29, which the certain range holds and [77.65, 97.0] does not."""
    from streameval.metrics.anytime import certain_ratio_range

    b = np.concatenate([np.ones(25), np.zeros(13), [3.0, 3.0]])  # 40 cases in run order
    a = np.concatenate([np.full(25, 0.9628), np.zeros(13), [-3.0, -3.0]])
    truth = float(a.sum() / b.sum())
    assert truth == pytest.approx(0.58290, abs=1e-4)
    low, high = certain_ratio_range(a, b, 40, bounds=(-1.0, 1.0), max_denominator=3)
    assert low[37] - 1e-12 <= truth <= high[37] + 1e-12  # after 38 cases: held for certain
    assert not 0.7765 <= truth <= 0.970  # the narrower range would have excluded it
    assert low[-1] == high[-1] == pytest.approx(truth)

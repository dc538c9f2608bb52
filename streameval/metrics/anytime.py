"""Anytime-valid confidence sequences for a column's full-set value, case by case
(docs/methods.md#anytime-valid-intervals).

A run scores its cases one at a time in a uniformly random order. After n of the N cases, the
interval here says where the mean over **all** N cases can still land, and it is valid
*simultaneously* at every n: the chance that it misses the full-set mean at even one n is at
most 1 − confidence, so a run may be watched after every case and stopped whenever its
interval looks good. A fixed-n interval (mean ± 1.96·s/√n) checked the same way misses far
more often (``fixed_n_interval``, for comparison only).

The sequence is the hedged-capital betting confidence sequence for sampling **without
replacement** (Waudby-Smith & Ramdas, "Confidence sequences for sampling without replacement",
NeurIPS 2020; "Estimating means of bounded random variables by betting", JRSS-B 2023), with the
defaults of the authors' reference code (the ``hedged_cs`` of the ``confseq`` package):
predictable-mixture bets truncated at 1/2, hedged half up / half down, a grid of 1000 candidate
means, the running intersection and the "logical" bounds that sampling without replacement
gives for free. Pure numpy kernel, no I/O.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from streameval.errors import BadInputError

DEFAULT_CONFIDENCE = 0.95
"""Confidence of the sequence unless the caller asks for another."""

GRID_STEPS = 1000
"""Candidate means on [0, 1] (rescaled bounds) are i / GRID_STEPS; each end of the interval is
rounded outwards by one step, so the interval is at most 0.1 % of the bounds' range wider than
the exact set (0.1 point on a 0–100 column)."""

BET_TRUNCATION = 0.5
"""A bet never stakes more than half the capital that the remaining cases could wipe out (the
reference's ``trunc_scale``): the capital process stays positive and bets stay moderate."""

HEDGE_WEIGHT = 0.5
"""Capital split between betting the mean is higher and betting it is lower (``theta``)."""

PRIOR_MEAN = 0.5
PRIOR_VARIANCE = 0.25
PRIOR_CASES = 1
"""The bets' running mean and variance start from one pseudo-case at mean 1/2, variance 1/4
(the widest a [0, 1] variable can have), so the first bets are cautious."""

_MAX_CELLS = 2_000_000
"""Rows of a batch are worked in chunks of at most this many (row, candidate, case) cells, so
a batch of thousands of orders stays within about a hundred MB (and in cache-friendlier
pieces: larger chunks ran slower)."""

Verdict = Literal["better", "worse", "within", "undecided"]


def confidence_sequence(
    values: ArrayLike,
    population: int,
    confidence: float = DEFAULT_CONFIDENCE,
    bounds: tuple[float, float] = (0.0, 1.0),
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The interval on the mean of the whole population after each case, valid at every n.

    ``values`` are the per-case values in run order (the first n of a uniformly random order
    of the ``population`` cases, drawn without replacement); every one must lie in ``bounds``.
    Returns ``(low, high)``, two float arrays as long as ``values``: after case n the mean of
    all ``population`` values lies in ``[low[n-1], high[n-1]]`` at every n at once with
    probability at least ``confidence``.

    The intervals are intersected over time (``low`` is a running maximum, ``high`` a running
    minimum), so each interval lies inside the one before. If that intersection would be empty
    (only possible once the sequence has already missed, an event of probability at most
    1 − confidence) the last non-empty interval is kept. When every case has been seen
    (n == population) the interval is the exact mean, ``low == high``.

    Raises ``BadInputError`` for a value outside ``bounds`` or NaN, ``population`` below
    ``len(values)``, a confidence outside (0, 1) or bounds that are not finite and increasing.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise BadInputError("confidence_sequence", f"values must be 1-D, got shape {array.shape}")
    low, high = confidence_sequences(array[None, :], population, confidence, bounds)
    return low[0], high[0]


def confidence_sequences(
    values: ArrayLike,
    population: int,
    confidence: float = DEFAULT_CONFIDENCE,
    bounds: tuple[float, float] = (0.0, 1.0),
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``confidence_sequence`` for many runs at once: ``values`` is (runs, cases), one run per
    row (e.g. many random orders of one case set in a simulation); returns two arrays of the
    same shape. Row for row the numbers are those of ``confidence_sequence``."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 2:
        raise BadInputError("confidence_sequence", f"values must be 2-D, got shape {array.shape}")
    lo, hi = _check_bounds(bounds)
    alpha = 1.0 - _check_confidence(confidence)
    size = _check_population(population, array.shape[1])
    _check_values(array, lo, hi)
    unit = (array - lo) / (hi - lo)
    rows, cases = unit.shape
    low = np.empty_like(unit)
    high = np.empty_like(unit)
    chunk = max(1, _MAX_CELLS // max(1, (GRID_STEPS + 1) * cases))
    for start in range(0, rows, chunk):
        part = slice(start, start + chunk)
        low[part], high[part] = _hedged_unit_sequences(unit[part], size, alpha)
    low = lo + (hi - lo) * low
    high = lo + (hi - lo) * high
    if cases == size and cases > 0:
        # Every case seen: the mean is known exactly. fsum makes it independent of the order.
        exact = np.array([math.fsum(row) / size for row in array])
        low[:, -1] = exact
        high[:, -1] = exact
    return low, high


RATIO_STEPS = 2000
"""Candidate ratios tried by ``ratio_confidence_sequence``: ``bounds`` cut in this many steps;
each end of the interval is the first candidate outside it (0.05 % of the bounds' range, 0.1
point on a pooled direction-accuracy column), so rounding only ever widens it."""


def ratio_confidence_sequence(
    numerators: ArrayLike,
    denominators: ArrayLike,
    population: int,
    *,
    bounds: tuple[float, float] = (0.0, 1.0),
    max_denominator: float = 1.0,
    confidence: float = DEFAULT_CONFIDENCE,
    control: ArrayLike | None = None,
    control_bounds: tuple[float, float] = (0.0, 0.0),
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The interval on a **ratio of sums** over the whole population, ``R = ΣA / ΣB``, after
    each case, valid at every n at once with probability at least ``confidence``.

    A pooled column is such a ratio: a case adds ``A`` (the sum of its scored segments'
    values) and ``B`` (how many it scored; 0 when the column does not apply to it), so the
    full-set value weights each case by what it contributes, exactly as the pooled value does.
    Each case must have ``0 <= B <= max_denominator`` and ``bounds[0]·B <= A <=
    bounds[1]·B`` (``max_denominator`` known before the run: the most segments a case can
    score, from its keys).

    The interval is the test inversion of ``confidence_sequence``: for a candidate ratio r,
    ``d_i(r) = A_i − r·B_i`` has population mean 0 exactly when r = R, and is bounded; r stays
    in the interval while the confidence sequence for the mean of ``d(r)`` (rescaled to [0, 1])
    still holds 0. At the true R that sequence covers 0 at every n with probability at least
    ``confidence``, so R is in every interval with that probability. Candidates are
    ``RATIO_STEPS`` steps of ``bounds``; each end is rounded out to the first rejected one.

    ``control``: per-case values with population mean exactly 0 (a finished baseline's
    ``A'_i − R'·B'_i`` on the same cases), subtracted from ``d(r)``: the sequence then works
    on the paired difference, whose spread is smaller when the two runs move together case by
    case; validity is unchanged. ``control_bounds`` bounds it.

    Returns ``(low, high)`` as long as the values; before any case with ``B > 0`` it is
    ``bounds``. After the last case it is the exact ratio (NaN when ``ΣB`` is 0).
    """
    a = np.asarray(numerators, dtype=np.float64)
    b = np.asarray(denominators, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise BadInputError("ratio_confidence_sequence", "numerators and denominators differ")
    lo, hi = _check_bounds(bounds)
    alpha = 1.0 - _check_confidence(confidence)
    size = _check_population(population, a.shape[0])
    top = float(max_denominator)
    if not (math.isfinite(top) and top > 0):
        raise BadInputError("max_denominator", f"must be a positive number, got {top}")
    c = np.zeros_like(a) if control is None else np.asarray(control, dtype=np.float64)
    c_lo, c_hi = (float(control_bounds[0]), float(control_bounds[1]))
    slack = 1e-9 * max(1.0, top, abs(lo), abs(hi))
    bad = (
        ~np.isfinite(a)
        | ~np.isfinite(b)
        | (b < -slack)
        | (b > top + slack)
        | (a < lo * b - slack)
        | (a > hi * b + slack)
        | (c.shape != a.shape)
        | ~np.isfinite(c)
        | (c < c_lo - slack)
        | (c > c_hi + slack)
    )
    if np.any(bad):
        case = int(np.argmax(bad)) + 1
        raise BadInputError(
            "ratio_confidence_sequence", f"case {case} is outside the stated bounds"
        )
    cases = a.shape[0]
    if cases == 0:
        return np.empty(0), np.empty(0)
    ratios = lo + (hi - lo) * np.arange(RATIO_STEPS + 1, dtype=np.float64) / RATIO_STEPS
    span = (hi - lo) * top + (c_hi - c_lo)
    floor = (lo - ratios) * top - c_hi  # the least d(r) − c can be, per candidate
    z = a[None, :] - ratios[:, None] * b[None, :] - c[None, :]
    unit = np.clip((z - floor[:, None]) / span, 0.0, 1.0)
    target = -floor / span  # where 0 lands on the unit scale
    t = np.arange(1, cases + 1, dtype=np.float64)
    before = np.concatenate([np.zeros((unit.shape[0], 1)), np.cumsum(unit, axis=1)[:, :-1]], axis=1)
    bets = _predictable_bets(unit, t, alpha * HEDGE_WEIGHT)[:, None, :]
    inside = _still_inside(unit, size, alpha, target[:, None], before, bets)[:, 0, :]
    # what sampling without replacement gives for free, once case t is in: the cases still
    # unseen lie in [0, 1], so their sum must be between 0 and their count
    unseen = size * target[:, None] - (before + unit)
    inside &= (unseen >= -1e-12) & (unseen <= size - t[None, :] + 1e-12)
    kept = np.logical_and.accumulate(inside, axis=1)  # the running intersection
    low = np.full(cases, lo)
    high = np.full(cases, hi)
    for n in range(cases):
        accepted = np.flatnonzero(kept[:, n])
        if accepted.size == 0:  # only once the sequence has missed: keep the last interval
            if n:
                low[n], high[n] = low[n - 1], high[n - 1]
            continue
        first, last = int(accepted[0]), int(accepted[-1])
        low[n] = ratios[first - 1] if first > 0 else lo
        high[n] = ratios[last + 1] if last < RATIO_STEPS else hi
    if cases == size:  # every case seen: the ratio is known exactly
        total = math.fsum(b)
        exact = math.fsum(a) / total if total > 0 else math.nan
        low[-1] = high[-1] = exact
    return low, high


def certain_ratio_range(
    numerators: ArrayLike,
    denominators: ArrayLike,
    population: int,
    *,
    bounds: tuple[float, float] = (0.0, 1.0),
    max_denominator: float = 1.0,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Where ``R = ΣA / ΣB`` over the whole population can still land after each case, for
    certain: the unseen ``m`` cases add a total ``T`` of ``B`` in ``[0, m·max_denominator]``
    and a sum of ``A`` in ``[lo·T, hi·T]``, and ``(S_A + x·T) / (S_B + T)`` is monotone in T,
    so the ends are at ``T = 0`` (the value so far) and at ``T = m·max_denominator`` with
    every unseen value at ``lo`` or ``hi``. Holds with probability one (no sampling
    assumption), so intersecting an interval with it keeps that interval's coverage; it is a
    point once every case is in. Before any ``B > 0`` it is ``bounds`` (or NaN at n = N).

    ``ratio_confidence_sequence`` applies the same bound on its grid of candidates (rounded
    out by a step); this is its exact form, intersected with the sequence by the callers.
    """
    a = np.asarray(numerators, dtype=np.float64)
    b = np.asarray(denominators, dtype=np.float64)
    lo, hi = _check_bounds(bounds)
    size = _check_population(population, a.shape[0])
    top = float(max_denominator)
    seen_a, seen_b = np.cumsum(a), np.cumsum(b)
    unseen = (size - np.arange(1, a.shape[0] + 1, dtype=np.float64)) * top
    with np.errstate(divide="ignore", invalid="ignore"):
        now = np.where(seen_b > 0, seen_a / np.where(seen_b > 0, seen_b, 1.0), np.nan)
        total = seen_b + unseen
        worst = np.where(total > 0, (seen_a + lo * unseen) / np.where(total > 0, total, 1.0), lo)
        best = np.where(total > 0, (seen_a + hi * unseen) / np.where(total > 0, total, 1.0), hi)
    low = np.where(seen_b > 0, np.minimum(now, worst), np.where(unseen > 0, lo, np.nan))
    high = np.where(seen_b > 0, np.maximum(now, best), np.where(unseen > 0, hi, np.nan))
    return low, high


def fixed_n_interval(
    values: ArrayLike, population: int, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The textbook fixed-n interval after each case, for comparison only: mean ± z·s/√n with
    the finite-population correction √((N − n)/(N − 1)), s the sample standard deviation.

    It is valid at one n fixed in advance, **not** when looked at after every case (that is why
    ``confidence_sequence`` exists). ``values`` is 1-D or (runs, cases); before two cases there
    is no s and the interval is (−inf, inf). Unbounded values are not checked."""
    array = np.asarray(values, dtype=np.float64)
    flat = array.ndim == 1
    rows = np.atleast_2d(array)
    size = _check_population(population, rows.shape[1])
    z = statistics.NormalDist().inv_cdf(0.5 + _check_confidence(confidence) / 2)
    n = np.arange(1, rows.shape[1] + 1, dtype=np.float64)
    total = np.cumsum(rows, axis=1)
    mean = total / n
    with np.errstate(invalid="ignore", divide="ignore"):
        # Sample variance from running sums, centred on the first value for stability.
        shifted = rows - rows[:, :1]
        s1 = np.cumsum(shifted, axis=1)
        s2 = np.cumsum(shifted * shifted, axis=1)
        variance = np.maximum(s2 - s1 * s1 / n, 0.0) / (n - 1)
        fpc = np.sqrt(np.maximum(size - n, 0.0) / max(size - 1, 1))
        half = z * np.sqrt(variance / n) * fpc
    half[:, 0] = np.inf
    low, high = mean - half, mean + half
    return (low[0], high[0]) if flat else (low, high)


def decide(low: float, high: float, margin: float) -> Verdict:
    """The verdict on a difference (new − baseline) from its interval ``[low, high]``.

    ``margin`` is in the interval's units (points for a 0–100 column) and at least 0; the
    difference is oriented so that positive is better (negate it for a lower-is-better column).

    - ``"better"``: ``low > +margin`` — the whole interval lies above the margin;
    - ``"worse"``: ``high < -margin`` — the whole interval lies below minus the margin;
    - ``"within"``: ``-margin <= low`` and ``high <= +margin`` — the whole interval lies inside
      the margin band, so whatever the rest of the cases hold the two are equal to the margin;
    - ``"undecided"``: otherwise (the interval straddles ±margin).

    Once every case is seen the interval is one point, so the verdict is never ``"undecided"``
    there.
    """
    lower, upper, band = float(low), float(high), float(margin)
    if math.isnan(lower) or math.isnan(upper) or lower > upper:
        raise BadInputError("decide", f"interval [{low}, {high}] is not an interval")
    if not (math.isfinite(band) and band >= 0):
        raise BadInputError("--margin", f"must be a finite number of points >= 0, got {margin}")
    if lower > band:
        return "better"
    if upper < -band:
        return "worse"
    if -band <= lower and upper <= band:
        return "within"
    return "undecided"


def width_met(low: float, high: float, width: float) -> bool:
    """Whether the interval ``[low, high]`` is at most ``width`` wide (``high - low <= width``,
    in the interval's units): the column is known to ±width/2."""
    lower, upper = float(low), float(high)
    if math.isnan(lower) or math.isnan(upper) or lower > upper:
        raise BadInputError("width_met", f"interval [{low}, {high}] is not an interval")
    return upper - lower <= float(width)


def _hedged_unit_sequences(
    x: NDArray[np.float64], population: int, alpha: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The sequence on [0, 1] for each row of ``x`` (runs × cases, values in [0, 1]), without
    the exact last step (the caller sets it in the original units).

    For a candidate mean m, the mean of the cases not yet seen before case t is
    ``m_t = (N·m − S_{t−1}) / (N − t + 1)``: under m, case t has conditional mean m_t, so
    ``K⁺_t = Π (1 + λ⁺_s (x_s − m_s))`` and ``K⁻_t = Π (1 − λ⁻_s (x_s − m_s))`` are
    nonnegative martingales whatever the predictable bets λ, and by Ville's inequality
    ``max(θK⁺, (1 − θ)K⁻)`` reaches 1/α with probability at most α. The interval after case t
    is every m still below 1/α (a candidate with m_t outside [0, 1] is impossible).
    """
    rows, cases = x.shape
    if cases == 0:
        nothing = np.empty((rows, 0))
        return nothing, nothing.copy()
    t = np.arange(1, cases + 1, dtype=np.float64)
    total = np.cumsum(x, axis=1)
    before = np.concatenate([np.zeros((rows, 1)), total[:, :-1]], axis=1)  # S_{t-1}
    bets = _predictable_bets(x, t, alpha * HEDGE_WEIGHT)[:, None, :]

    grid = np.arange(GRID_STEPS + 1, dtype=np.float64) / GRID_STEPS
    inside = _still_inside(x, population, alpha, grid[None, :], before, bets)

    any_inside = inside.any(axis=1)
    first = np.argmax(inside, axis=1)
    last = GRID_STEPS - np.argmax(inside[:, ::-1, :], axis=1)
    low = np.where(any_inside, np.maximum(0.0, grid[first] - 1.0 / GRID_STEPS), 0.0)
    high = np.where(any_inside, np.minimum(1.0, grid[last] + 1.0 / GRID_STEPS), 1.0)

    # What sampling without replacement gives for free: the unseen cases are in [0, 1].
    logical_low = total / population
    logical_high = (total + population - t) / population
    raw_low = np.maximum(low, logical_low)
    raw_high = np.minimum(high, logical_high)
    missed = raw_low > raw_high
    raw_low = np.where(missed, logical_low, raw_low)
    raw_high = np.where(missed, logical_high, raw_high)

    run_low = np.maximum.accumulate(raw_low, axis=1)
    run_high = np.minimum.accumulate(raw_high, axis=1)
    # low only rises and high only falls, so an empty intersection stays empty from its first
    # case on: keep the last non-empty interval from there.
    empty = run_low > run_high
    kept = np.maximum(cases - 1 - empty.sum(axis=1), 0)
    rows_index = np.arange(rows)
    run_low = np.where(empty, run_low[rows_index, kept][:, None], run_low)
    run_high = np.where(empty, run_high[rows_index, kept][:, None], run_high)
    return run_low, run_high


def _still_inside(
    x: NDArray[np.float64],
    population: int,
    alpha: float,
    candidates: NDArray[np.float64],
    before: NDArray[np.float64],
    bets: NDArray[np.float64],
) -> NDArray[np.bool_]:
    """Whether each candidate mean is still in the set after each case: (rows, candidates,
    cases) from ``x`` (rows, cases) on [0, 1], ``candidates`` (rows or 1, candidates),
    ``before`` the sums before each case and ``bets`` (rows, 1, cases) the predictable bets.
    The candidate's conditional mean of case t must lie in [0, 1] and both capitals below
    their thresholds (``_hedged_unit_sequences``)."""
    t = np.arange(1, x.shape[1] + 1, dtype=np.float64)
    remaining = population - t + 1.0
    # (rows, candidates, cases), worked in place: each pass over these cells is most of the cost.
    m_t = population * candidates[:, :, None] - before[:, None, :]
    m_t /= remaining  # the conditional mean of case t under each candidate
    step = x[:, None, :] - m_t
    inside = m_t >= 0.0
    inside &= m_t <= 1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        capital = np.divide(BET_TRUNCATION, m_t)
        np.minimum(capital, bets, out=capital)
        capital *= step
        capital += 1.0
        np.cumprod(capital, axis=2, out=capital)
        inside &= capital < 1.0 / (alpha * HEDGE_WEIGHT)
        np.subtract(1.0, m_t, out=m_t)
        capital = np.divide(BET_TRUNCATION, m_t, out=capital)
        np.minimum(capital, bets, out=capital)
        capital *= step
        np.subtract(1.0, capital, out=capital)
        np.cumprod(capital, axis=2, out=capital)
        inside &= capital < 1.0 / (alpha * (1.0 - HEDGE_WEIGHT))
    return inside


def _predictable_bets(
    x: NDArray[np.float64], t: NDArray[np.float64], alpha: float
) -> NDArray[np.float64]:
    """The predictable-mixture bet before each case: ``√(2 log(1/α) / (t log(1+t) σ²_{t−1}))``,
    σ² the running variance of the cases before (regularised by the prior pseudo-case), so the
    bet on case t uses only cases 1..t−1."""
    rows = x.shape[0]
    seen = t + PRIOR_CASES
    mean = np.minimum((PRIOR_CASES * PRIOR_MEAN + np.cumsum(x, axis=1)) / seen, 1.0)
    spread = (PRIOR_CASES * PRIOR_VARIANCE + np.cumsum((x - mean) ** 2, axis=1)) / seen
    before = np.concatenate([np.full((rows, 1), PRIOR_VARIANCE), spread[:, :-1]], axis=1)
    bets: NDArray[np.float64] = np.sqrt(2.0 * math.log(1.0 / alpha) / (t * np.log1p(t) * before))
    return bets


def _check_confidence(confidence: float) -> float:
    value = float(confidence)
    if not 0.0 < value < 1.0:
        raise BadInputError("confidence", f"must be between 0 and 1 (exclusive), got {confidence}")
    return value


def _check_bounds(bounds: Sequence[float]) -> tuple[float, float]:
    if len(bounds) != 2:
        raise BadInputError("bounds", f"must be (low, high), got {bounds!r}")
    lo, hi = float(bounds[0]), float(bounds[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise BadInputError("bounds", f"must be finite with low < high, got {bounds!r}")
    return lo, hi


def _check_population(population: int, cases: int) -> int:
    if isinstance(population, bool) or not isinstance(population, int | np.integer):
        raise BadInputError("population", f"must be a whole number of cases, got {population!r}")
    size = int(population)
    if size < 1 or size < cases:
        raise BadInputError(
            "population", f"{size} cases is fewer than the {cases} values given (or below 1)"
        )
    return size


def _check_values(values: NDArray[np.float64], lo: float, hi: float) -> None:
    bad = np.isnan(values) | (values < lo) | (values > hi)
    if bad.any():
        row, case = (int(i) for i in np.argwhere(bad)[0])
        where = f"case {case + 1}" if values.shape[0] == 1 else f"run {row + 1}, case {case + 1}"
        raise BadInputError(
            "confidence_sequence",
            f"value {values[row, case]} at {where} is outside bounds ({lo}, {hi})",
        )

"""The float32 band around the threshold (``transnet_guard.py``), on stand-in predictors: a
window is sent to float32 exactly when a probability it decides lies in the band, so the
decisions are float32's whenever the fast pass errs by less than the band."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest

from streameval.perception.transnet_guard import (
    CHECK_LOGIT_ERROR,
    GUARD_LOGIT,
    GuardedPredict,
    check_fast_precision,
    guard_band,
)

pytestmark = pytest.mark.cpu_features  # run again under STREAMEVAL_CPU_FEATURES=baseline

KEPT = slice(25, 75)


def test_the_band_is_symmetric_in_logit_around_the_threshold() -> None:
    low, high = guard_band(0.5)
    assert low == pytest.approx(1 / (1 + math.e**GUARD_LOGIT))
    assert high == pytest.approx(1 - low)
    low, high = guard_band(0.2)
    z = math.log(0.2 / 0.8)
    assert math.log(low / (1 - low)) == pytest.approx(z - GUARD_LOGIT)
    assert math.log(high / (1 - high)) == pytest.approx(z + GUARD_LOGIT)
    assert guard_band(0.0) == (-math.inf, math.inf)  # no logit: every window in float32
    assert guard_band(1.0) == (-math.inf, math.inf)


def _predictors(
    fast_out: npt.NDArray[np.float64], exact_out: npt.NDArray[np.float64]
) -> tuple[GuardedPredict, list[str]]:
    calls: list[str] = []

    def fast(window: npt.NDArray[np.uint8], at_tail: bool) -> npt.NDArray[np.float64]:
        calls.append("fast")
        return fast_out

    def exact(window: npt.NDArray[np.uint8], at_tail: bool) -> npt.NDArray[np.float64]:
        calls.append(f"exact tail={at_tail}")
        return exact_out

    return GuardedPredict(fast, exact, 0.5, KEPT), calls


def test_a_window_far_from_the_threshold_keeps_the_fast_pass() -> None:
    fast = np.full(100, 0.01)
    fast[60] = 0.95
    guarded, calls = _predictors(fast, np.full(100, 0.02))
    window = np.zeros((100, 27, 48, 3), np.uint8)
    assert guarded(window, False) is fast
    assert calls == ["fast"] and (guarded.windows, guarded.exact_windows) == (1, 0)


@pytest.mark.parametrize("p", [0.27, 0.5, 0.49, 0.73])
def test_a_decided_frame_in_the_band_sends_the_window_to_float32(p: float) -> None:
    fast = np.full(100, 0.01)
    fast[74] = p  # the last frame this window decides
    exact = np.full(100, 0.03)
    guarded, calls = _predictors(fast, exact)
    window = np.zeros((100, 27, 48, 3), np.uint8)
    assert guarded(window, True) is exact
    assert calls == ["fast", "exact tail=True"]
    assert (guarded.windows, guarded.exact_windows) == (1, 1)


@pytest.mark.parametrize("frame", [0, 24, 75, 99])
def test_frames_the_window_does_not_decide_do_not_trigger_float32(frame: int) -> None:
    """Outside the kept 50 the neighbouring windows decide (the padding at the clip's ends
    is never kept)."""
    fast = np.full(100, 0.01)
    fast[frame] = 0.5
    guarded, calls = _predictors(fast, np.full(100, 0.03))
    guarded(np.zeros((100, 27, 48, 3), np.uint8), False)
    assert calls == ["fast"]


def test_decisions_match_float32_for_any_error_inside_the_band() -> None:
    """Randomised: a fast pass that misses float32 by less than the band in logit never
    changes a decision after the guard (the naive reference: float32 alone)."""
    rng = np.random.default_rng(7)
    for _ in range(500):
        z = rng.normal(0, 4, 100)
        exact = 1 / (1 + np.exp(-z))
        err = rng.uniform(-0.99, 0.99, 100) * GUARD_LOGIT
        fast = 1 / (1 + np.exp(-(z + err)))
        guarded, _ = _predictors(fast, exact)
        got = guarded(np.zeros((100, 27, 48, 3), np.uint8), False)
        assert np.array_equal(got[KEPT] > 0.5, exact[KEPT] > 0.5)


def test_the_check_refuses_a_fast_pass_that_errs_or_decides_otherwise() -> None:
    exact = np.array([0.001, 0.2, 0.8, 0.999])
    assert check_fast_precision(exact, exact, 0.5) == ""
    z = np.log(exact / (1 - exact))
    close = 1 / (1 + np.exp(-(z + CHECK_LOGIT_ERROR / 2)))
    assert check_fast_precision(close, exact, 0.5) == ""
    far = 1 / (1 + np.exp(-(z + CHECK_LOGIT_ERROR * 2)))
    assert "in logit on the check clip" in check_fast_precision(far, exact, 0.5)
    flipped = exact.copy()
    flipped[2] = 0.4
    assert "differently" in check_fast_precision(flipped, exact, 0.5)
    assert "probabilities" in check_fast_precision(exact[:3], exact, 0.5)

"""The per-frame depth-free motion type (docs/methods.md#motion-type-fit, "Without depth"):
still frames carry no weight, all-still samples give no fit, exact fields are typed exactly."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from streameval.core.episode.motion import FitSample
from streameval.metrics.fits import motion_type
from streameval.metrics.fits.motion_type import (
    DEPTH_FREE_METHOD,
    PLAIN_DEPTH_FREE_METHOD,
    analysis_focal,
    fit_flow_rotation,
    fit_flow_rotation_per_frame,
    fit_motion_type,
    omega_std_error,
    rotation_rate,
)

F = analysis_focal(640)
Y, X = (a.reshape(-1).astype(np.float32) for a in np.mgrid[-200:201:24, -300:301:24])


def _yaw(frame: int, omega: float) -> FitSample:
    u, v = omega * (F + X * X / F), omega * X * Y / F
    return FitSample(frame, X, Y, u.astype(np.float32), v.astype(np.float32), None, True)


def _strafe(frame: int, tx: float) -> FitSample:
    invz = 1.0 / (2.0 + 8.0 * ((X + 300) / 600) ** 2)  # depth varies across the view
    u = (F * tx * invz).astype(np.float32)
    return FitSample(frame, X, Y, u, np.zeros_like(u), None, True)


def test_a_turn_that_stalls_is_still_a_turn() -> None:
    samples = [_yaw(0, 0.01), _yaw(16, 0.0), _yaw(32, 0.01), _yaw(48, 0.0)]
    fit = fit_flow_rotation_per_frame(samples, F)
    assert fit is not None and fit.method == DEPTH_FREE_METHOD
    assert fit.p_yaw > 0.99 and fit.n_frames == 2
    pooled = fit_flow_rotation(samples, F)
    assert pooled is not None and pooled.p_yaw < 0.8  # the pooled ω read the stall as parallax


def test_spreads_are_p10_p90_on_derotated_samples_and_p5_p95_on_older_ones() -> None:
    """A few outlier points (an aliased silhouette jumping a column as the turn moves it) do
    not make a turn parallax on derotated samples; a cache perceived before keeps its numbers."""
    turn = _yaw(0, 4.0 / F)
    u = turn.u.copy()
    u[:30] -= 0.4  # 30 of 442 points (7 %): within P5 - P95, outside P10 - P90
    outliers = FitSample(0, X, Y, u, turn.v, None, True)
    new = fit_flow_rotation_per_frame([outliers], F)
    old = fit_flow_rotation_per_frame([replace(outliers, derotated=False)], F)
    assert new is not None and old is not None
    assert new.trans_amp < 1e-4 and new.p_yaw > 0.9999
    assert abs(old.trans_amp - 0.4) < 1e-3 and old.p_yaw < 0.91
    assert old.method == PLAIN_DEPTH_FREE_METHOD


def test_samples_perceived_without_derotation_keep_their_method_name() -> None:
    plain = [replace(_yaw(0, 0.01), derotated=False), _yaw(16, 0.01)]
    fit = fit_flow_rotation_per_frame(plain, F)
    assert fit is not None and fit.method == PLAIN_DEPTH_FREE_METHOD


def test_a_strafe_is_translation_and_all_still_is_no_fit() -> None:
    fit = fit_motion_type([_strafe(0, 0.05), _strafe(16, 0.0), _strafe(32, 0.05)], F)
    assert fit is not None and fit.p_trans > 0.99
    assert fit_motion_type([_yaw(0, 0.0), _strafe(16, 0.0)], F) is None


def _noisy(sample: FitSample, sigma: float, seed: int) -> FitSample:
    rng = np.random.default_rng(seed)
    u = sample.u + rng.normal(0.0, sigma, sample.u.shape).astype(np.float32)
    v = sample.v + rng.normal(0.0, sigma, sample.v.shape).astype(np.float32)
    return FitSample(sample.frame, sample.x, sample.y, u, v, None, True)


def test_flow_noise_is_not_parallax() -> None:
    # a 4 px turn with 0.15 px flow noise: the residual's spread (~0.5 px) is the noise's,
    # and the vertical residual measures it (the estimator's noise floor)
    turn = [_noisy(_yaw(f, 4.0 / F), 0.15, f) for f in (0, 16, 32)]
    fit = fit_flow_rotation_per_frame(turn, F)
    assert fit is not None and fit.p_yaw > 0.97, fit
    pooled = fit_flow_rotation(turn, F)  # no noise floor
    assert pooled is not None and pooled.p_yaw < 0.92, pooled
    strafe = [_noisy(_strafe(f, 0.05), 0.15, f) for f in (0, 16, 32)]
    fit = fit_flow_rotation_per_frame(strafe, F)
    assert fit is not None and fit.p_trans > 0.97, fit


def _v_scatter(sample: FitSample, sigma: float, seed: int) -> FitSample:
    rng = np.random.default_rng(seed)
    return replace(sample, v=(sample.v + rng.normal(0.0, sigma, sample.v.shape)).astype(np.float32))


def test_scatter_in_v_is_not_a_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """A strafe whose v is measured with 0.4 px of scatter (fine stripes): its least-squares ω
    is noise: rot_amp is ω less 5 of its standard errors, in quadrature."""
    for seed in range(6):
        strafe = [_v_scatter(_strafe(f, 0.02), 0.4, 10 * seed + f) for f in (0, 16, 32)]
        fit = fit_flow_rotation_per_frame(strafe, F)
        assert fit is not None and fit.p_trans > 0.999, fit
        monkeypatch.setattr(motion_type, "DEPTH_FREE_OMEGA_SE", 0.0)
        unfloored = fit_flow_rotation_per_frame(strafe, F)
        monkeypatch.undo()
        assert unfloored is not None and unfloored.p_trans < 0.961, unfloored
        # a cache perceived before derotation keeps its numbers
        old = fit_flow_rotation_per_frame([replace(s, derotated=False) for s in strafe], F)
        assert old is not None and old.rot_amp == unfloored.rot_amp
    # a 4 px turn under the same scatter (SE ~0.22 px): ~0.15 px a frame less of it, all turn
    turn = [_v_scatter(_yaw(f, 4.0 / F), 0.4, f) for f in (0, 16, 32)]
    fit = fit_flow_rotation_per_frame(turn, F)
    assert fit is not None and fit.p_yaw > 0.999 and 3 * 3.75 < fit.rot_amp < 3 * 3.95, fit


def test_a_strafe_with_a_turn_keeps_both_parts() -> None:
    # half the centre flow from each: the noise floor takes nothing from an exact field
    mixed = []
    for f in (0, 16):
        y, s = _yaw(f, 2.0 / F), _strafe(f, 0.05)
        mixed.append(FitSample(f, X, Y, y.u + s.u, y.v + s.v, None, True))
    fit = fit_flow_rotation_per_frame(mixed, F)
    exact_trans = fit_flow_rotation_per_frame([_strafe(f, 0.05) for f in (0, 16)], F)
    assert fit is not None and exact_trans is not None
    assert abs(fit.trans_amp - exact_trans.trans_amp) < 1e-3 * exact_trans.trans_amp
    assert abs(fit.rot_amp - 2 * 2.0) < 1e-3


def test_a_flat_slide_has_no_type_evidence() -> None:
    # a picture sliding sideways: no turn's field (no v, no x² growth) and no parallax; it
    # gets the no-fit rule (weight 1), not 0 / (0 + 0 + 1e-6) = a pure turn
    flat = [FitSample(f, X, Y, np.full_like(X, 3.0), np.zeros_like(X), None) for f in (0, 16, 32)]
    assert fit_flow_rotation_per_frame(flat, F) is None
    with_turn = [*flat, _yaw(48, 4.0 / F)]
    fit = fit_flow_rotation_per_frame(with_turn, F)
    assert fit is not None and fit.n_frames == 1 and fit.p_yaw > 0.99


def test_the_depth_free_type_is_read_in_the_stable_zone() -> None:
    # frames 0 and 16 still do the previous key (a strafe), 48 and 64 the turn
    samples = [_strafe(0, 0.05), _strafe(16, 0.05), _yaw(48, 4.0 / F), _yaw(64, 4.0 / F)]
    whole = fit_motion_type(samples, F)
    zone = fit_motion_type(samples, F, range(48, 70))
    assert whole is not None and whole.p_yaw < 0.5
    assert zone is not None and zone.p_yaw > 0.99 and zone.n_frames == 2
    # no sample with type evidence in the zone: every sample, as before
    assert fit_motion_type(samples, F, range(30, 40)) == whole
    still_zone = [*samples[:2], _yaw(48, 0.0)]
    assert fit_motion_type(still_zone, F, range(48, 70)) == fit_motion_type(still_zone, F)


def test_depth_samples_ignore_the_zone() -> None:
    invz = np.full_like(X, 0.2)
    samples = [
        FitSample(f, X, Y, np.full_like(X, 1.0 + f), np.zeros_like(X), invz) for f in (0, 48)
    ]
    assert fit_motion_type(samples, F, range(40, 60)) == fit_motion_type(samples, F)


def test_omega_std_error_is_the_least_squares_standard_error() -> None:
    """Against the textbook formula for a regression through the origin: the residual variance
    s² = RSS / (n − 1), Var(ω) = s² / Σg² (written out naively, point by point)."""
    rng = np.random.default_rng(7)
    x, y = rng.uniform(-300, 300, 200), rng.uniform(-200, 200, 200)
    v = 0.01 * x * y / F + rng.normal(0.0, 0.3, 200)
    omega = rotation_rate(x, y, v, F)
    residual = v - omega * x * y / F
    rss = sum(float(r) ** 2 for r in residual)
    sgg = sum((float(a) * float(b) / F) ** 2 for a, b in zip(x, y, strict=True))
    assert omega_std_error(x, y, residual, F) == pytest.approx((rss / 199 / sgg) ** 0.5, rel=1e-12)
    # no turn's field to fit (all on one row) or a single point: 0
    assert omega_std_error(x, np.zeros_like(y), residual, F) == 0.0
    assert omega_std_error(x[:1], y[:1], residual[:1], F) == 0.0

"""Motion-type fits on analytic flow fields whose motion is known."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from streameval.core.episode.motion import FitSample
from streameval.metrics.fits.motion_type import (
    analysis_focal,
    fit_depth_parallax,
    fit_flow_rotation,
    fit_frames,
    fit_motion_type,
)
from streameval.perception.motion_samples import sample_fit

W, H = 640, 432
F = analysis_focal(W)


def _scene_depth(seed: int) -> np.ndarray:
    """A depth map with real variation: near pillars in front of a far wall."""
    rng = np.random.default_rng(seed)
    depth = np.full((H, W), 30.0, np.float32)
    for _ in range(8):
        x0 = int(rng.integers(0, W - 60))
        depth[:, x0 : x0 + 60] = rng.uniform(2.0, 12.0)
    return depth


def _strafe_flow(depth: np.ndarray, tx: float) -> np.ndarray:
    flow = np.zeros((H, W, 2), np.float32)
    flow[..., 0] = F * tx / depth
    return flow


def _yaw_flow(omega: float) -> np.ndarray:
    ys, xs = np.mgrid[0:H, 0:W].astype(np.float64)
    x, y = xs - (W - 1) / 2, ys - (H - 1) / 2
    u = omega * (F + x * x / F)
    v = omega * x * y / F
    return np.stack([u, v], axis=-1).astype(np.float32)


def test_fit_frames_one_per_second_from_25_to_90_percent() -> None:
    frames = fit_frames(320, 640, 16.0, 960)  # a 20 s segment at 16 fps
    assert frames[0] == 400  # 25 %
    assert all(b - a == 16 for a, b in itertools.pairwise(frames))
    assert frames[-1] < 320 + 0.9 * 320  # below int(90 %), as the reference
    assert len(frames) == 13  # 400, 416, ..., 592


def test_fit_frames_short_segment_falls_back_to_three() -> None:
    assert fit_frames(0, 20, 16.0, 20) == [5, 11, 17]  # int() of linspace(5, 17, 3)


def test_fit_frames_step_is_rounded_half_to_even() -> None:
    # round(12.5) == 12 and round(13.5) == 14 in Python: the reference's frame step.
    assert fit_frames(0, 400, 12.5, 400)[:2] == [100, 112]
    assert fit_frames(0, 400, 13.5, 400)[:2] == [100, 114]


def test_fit_frames_stop_three_frames_before_the_end() -> None:
    # The last segment's 90 % point lies past N - 3 when it is short: the picks stop there.
    assert max(fit_frames(0, 10, 1.0, 10)) < 7


@pytest.mark.parametrize("with_depth", [True, False])
def test_strafe_is_typed_as_translation(with_depth: bool) -> None:
    depth = _scene_depth(0)
    samples = [
        sample_fit(i, _strafe_flow(depth, 0.05), depth[::4, ::4] if with_depth else None)
        for i in range(3)
    ]
    fit = fit_motion_type(samples, F)
    assert fit is not None
    assert fit.p_trans > 0.9, fit


@pytest.mark.parametrize("with_depth", [True, False])
def test_yaw_is_typed_as_rotation(with_depth: bool) -> None:
    depth = _scene_depth(1)
    samples = [
        sample_fit(i, _yaw_flow(0.02), depth[::4, ::4] if with_depth else None) for i in range(3)
    ]
    fit = fit_motion_type(samples, F)
    assert fit is not None
    assert fit.p_yaw > 0.6, fit  # depth path: the x² term of yaw flow is not constant in b


def test_depth_fit_recovers_slope_and_offset() -> None:
    rng = np.random.default_rng(5)
    invz = rng.uniform(0.05, 0.5, 2000).astype(np.float32)
    u = (7.0 * invz + 1.5).astype(np.float32)
    z = np.zeros_like(u)
    fit = fit_depth_parallax([FitSample(0, z, z, u, z, invz)])
    assert fit is not None
    lo, hi = np.percentile(invz, [1, 99])
    p5, p95 = np.percentile(invz[(invz >= lo) & (invz <= hi)], [5, 95])
    assert fit.trans_amp == pytest.approx(7.0 * (p95 - p5), rel=1e-4)
    assert fit.rot_amp == pytest.approx(1.5, rel=1e-4)


def test_mixed_motion_splits_weights() -> None:
    depth = _scene_depth(2)
    flow = _strafe_flow(depth, 0.03) + _yaw_flow(0.01)
    fit = fit_flow_rotation([sample_fit(0, flow, None)], F)
    assert fit is not None
    assert 0.2 < fit.p_trans < 0.8


def test_no_samples_no_fit() -> None:
    assert fit_motion_type([], F) is None

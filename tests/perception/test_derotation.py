"""Derotation of a depth-free fit frame (docs/methods.md#motion-type-fit, "Derotation"): the turn
is warped out of the pair and put back as its exact field, so DIS's error on the turn is not
read as parallax, and a pair that does not turn is left as it is."""

from __future__ import annotations

import math

import cv2
import numpy as np
import numpy.typing as npt

from streameval.metrics.fits.motion_type import (
    analysis_focal,
    fit_flow_rotation_per_frame,
    rotation_rate,
)
from streameval.perception.flow import DisFlow
from streameval.perception.motion_samples import derotated_flow, sample_fit

W, H = 640, 432
F = analysis_focal(W)


def _texture(seed: int) -> npt.NDArray[np.uint8]:
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (H // 4, W // 4), dtype=np.uint8)
    big = cv2.resize(small, (W, H), interpolation=cv2.INTER_CUBIC)
    return cv2.GaussianBlur(big, (0, 0), 1.0)


def _turned(image: npt.NDArray[np.uint8], omega: float) -> npt.NDArray[np.uint8]:
    """The view after a yaw of ``omega`` radians: each pixel p of ``image`` moves to K·R·K⁻¹·p."""
    k = np.array([[F, 0, (W - 1) / 2], [0, F, (H - 1) / 2], [0, 0, 1.0]])
    c, s = math.cos(omega), math.sin(omega)
    r = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    forward = k @ r @ np.linalg.inv(k)
    return cv2.warpPerspective(image, forward, (W, H), flags=cv2.INTER_LINEAR)


def test_a_pure_turn_is_put_back_as_its_exact_field() -> None:
    dis = DisFlow("fast")
    prev = _texture(0)
    omega = 6.0 / F  # 6 px at the centre, 8.2 px at the frame's sides
    nxt = _turned(prev, omega)
    plain = dis(prev, nxt)
    turned = derotated_flow(dis, prev, nxt, plain)
    sample = sample_fit(0, turned, None, derotated=True)
    ok = np.isfinite(sample.u)
    x, y = sample.x[ok].astype(np.float64), sample.y[ok].astype(np.float64)
    v = sample.v[ok].astype(np.float64)
    assert abs(rotation_rate(x, y, v, F) - omega) < 0.02 * omega
    fit = fit_flow_rotation_per_frame([sample], F)
    before = fit_flow_rotation_per_frame([sample_fit(0, plain, None)], F)
    assert fit is not None and before is not None
    assert fit.trans_amp < before.trans_amp, (fit, before)
    assert fit is not None and fit.p_yaw > 0.98, fit


def test_a_pair_that_does_not_turn_is_left_as_it_is() -> None:
    dis = DisFlow("fast")
    prev = _texture(1)
    plain = dis(prev, prev)  # a still pair: no turn to warp out
    assert derotated_flow(dis, prev, prev, plain) is plain

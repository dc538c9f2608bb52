"""Flow signals against a naive per-pixel reference and analytic flow fields."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from streameval.perception.analysis import to_analysis_gray
from streameval.perception.flow import DisFlow
from streameval.perception.signals import flow_signals, naive_flow_signals


def test_matches_naive_reference_on_random_flow() -> None:
    rng = np.random.default_rng(3)
    flow = rng.normal(size=(432, 640, 2)).astype(np.float32)
    sx, srad = flow_signals(flow)
    ref_sx, ref_srad = naive_flow_signals(flow)
    assert abs(sx - ref_sx) < 1e-12
    assert abs(srad - ref_srad) < 1e-9


def test_uniform_shift_gives_sx_and_almost_no_radial() -> None:
    flow = np.zeros((432, 640, 2), np.float32)
    flow[..., 0] = 2.5
    sx, srad = flow_signals(flow)
    assert sx == 2.5
    # The reference's centre is (W/2, H/2), half a pixel right of the pixel grid's centre, so
    # the radial parts of a uniform shift do not cancel exactly (measured −0.0037 at 2.5 px).
    assert srad == pytest.approx(naive_flow_signals(flow)[1], abs=1e-9)
    assert abs(srad) < 0.002 * sx


def test_expansion_is_positive_radial_and_contraction_negative() -> None:
    h, w = 432, 640
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    zoom = np.stack([xs - (w - 1) / 2, ys - (h - 1) / 2], axis=-1) * 0.05
    sx, srad = flow_signals(zoom.astype(np.float32))
    assert abs(sx) < 1e-6
    assert srad > 0
    _, srad_in = flow_signals((-zoom).astype(np.float32))
    assert srad_in == -srad


def test_centre_pixel_has_no_direction() -> None:
    flow = np.zeros((6, 8, 2), np.float32)
    flow[3, 4] = (100.0, 100.0)  # pixel (W/2, H/2): no radial direction (norm 0 + 1e-6)
    _, srad = flow_signals(flow)
    assert srad == 0.0


def _reference_signals(frames_rgb: list[np.ndarray]) -> list[tuple[float, float]]:
    """The reference's compute_signals with DIS in place of SEA-RAFT, written out plainly:
    resize the colour frame to 640×432 (cv2's default bilinear), grey for DIS, stride 2,
    centre (W/2, H/2), r = offset / (hypot + 1e-6), float64 means."""
    grey = [cv2.cvtColor(cv2.resize(f, (640, 432)), cv2.COLOR_RGB2GRAY) for f in frames_rgb]
    ys, xs = np.mgrid[0:432, 0:640].astype(np.float64)
    rx, ry = xs - 320.0, ys - 216.0
    rn = np.hypot(rx, ry) + 1e-6
    rx, ry = rx / rn, ry / rn
    dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_FAST)
    out = []
    for i in range(len(grey) - 2):
        fl = dis.calc(grey[i], grey[i + 2], None).astype(np.float64)
        u, v = fl[..., 0], fl[..., 1]
        out.append((float(u.mean()), float((u * rx + v * ry).mean())))
    return out


def test_signal_path_follows_the_reference_on_generated_frames() -> None:
    rng = np.random.default_rng(5)
    texture = cv2.resize(
        rng.integers(0, 256, (90, 120, 3), dtype=np.uint8), (1000, 700), cv2.INTER_CUBIC
    )
    frames = []
    for t in range(8):  # a pan plus a slow zoom, at a native size that is not 640×432
        s = 1.0 + 0.01 * t
        m = np.float32([[s, 0, -3.0 * t - 20], [0, s, -10]])
        frames.append(cv2.warpAffine(texture, m, (960, 648)))
    dis = DisFlow("fast")
    grey = [to_analysis_gray(f) for f in frames]
    ours = [flow_signals(dis(grey[i], grey[i + 2])) for i in range(len(grey) - 2)]
    want = _reference_signals(frames)
    for (sx, sr), (wsx, wsr) in zip(ours, want, strict=True):
        assert sx == pytest.approx(wsx, abs=1e-5)
        assert sr == pytest.approx(wsr, abs=1e-5)
    assert all(abs(sx) > 1.0 and sr > 0.0 for sx, sr in ours)  # real motion, expanding

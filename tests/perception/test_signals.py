"""Flow signals against a naive per-pixel reference and analytic flow fields."""

from __future__ import annotations

import numpy as np

from streameval.perception.signals import flow_signals, naive_flow_signals


def test_matches_naive_reference_on_random_flow() -> None:
    rng = np.random.default_rng(3)
    flow = rng.normal(size=(432, 640, 2)).astype(np.float32)
    sx, srad = flow_signals(flow)
    ref_sx, ref_srad = naive_flow_signals(flow)
    assert abs(sx - ref_sx) < 1e-12
    assert abs(srad - ref_srad) < 1e-9


def test_uniform_shift_gives_sx_and_no_radial() -> None:
    flow = np.zeros((432, 640, 2), np.float32)
    flow[..., 0] = 2.5
    sx, srad = flow_signals(flow)
    assert sx == 2.5
    assert abs(srad) < 1e-9  # symmetric about the centre: radial parts cancel


def test_expansion_is_positive_radial_and_contraction_negative() -> None:
    h, w = 432, 640
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    zoom = np.stack([xs - (w - 1) / 2, ys - (h - 1) / 2], axis=-1) * 0.05
    sx, srad = flow_signals(zoom.astype(np.float32))
    assert abs(sx) < 1e-6
    assert srad > 0
    _, srad_in = flow_signals((-zoom).astype(np.float32))
    assert srad_in == -srad


def test_odd_size_centre_pixel_has_no_direction() -> None:
    flow = np.zeros((5, 5, 2), np.float32)
    flow[2, 2] = (100.0, 100.0)  # the centre pixel: no radial direction
    _, srad = flow_signals(flow)
    assert srad == 0.0

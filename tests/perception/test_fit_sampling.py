"""Depth-free fit samples (docs/methods.md#motion-type-fit): no sample where content enters or
leaves the view, a flow component only where the image has gradient along it, and a fast frame
is sampled from its one-frame pair."""

from __future__ import annotations

import numpy as np
import pytest

from streameval.perception import motion_samples
from streameval.perception.motion_samples import (
    FIT_BORDER_PX,
    FIT_SHORT_PAIR_PX,
    needs_short_pair,
    sample_fit,
    texture_grid,
)

W, H = 640, 432


def _uniform(u: float, v: float = 0.0) -> np.ndarray:
    flow = np.zeros((H, W, 2), np.float32)
    flow[..., 0], flow[..., 1] = u, v
    return flow


def test_points_whose_flow_leaves_the_view_carry_no_sample() -> None:
    still = sample_fit(0, _uniform(0.0), None)
    x, y = still.x + (W - 1) / 2, still.y + (H - 1) / 2
    edge = (x < FIT_BORDER_PX) | (x > W - 1 - FIT_BORDER_PX)
    edge |= (y < FIT_BORDER_PX) | (y > H - 1 - FIT_BORDER_PX)
    assert 0 < edge.sum() < 0.5 * edge.size
    assert np.isnan(still.u[edge]).all() and np.isfinite(still.u[~edge]).all()
    moved = sample_fit(0, _uniform(40.0), None)
    leaving = x + 40.0 > W - 1 - FIT_BORDER_PX
    assert np.isnan(moved.u[leaving]).all() and np.isnan(moved.v[leaving]).all()
    assert np.isfinite(moved.u[~leaving & ~edge]).all()
    assert np.allclose(moved.u[~leaving & ~edge], 40.0)


def test_the_depth_path_is_untouched_by_the_border(monkeypatch: pytest.MonkeyPatch) -> None:
    """With depth the samples are the reference's (docs/methods.md#motion-type-fit): flow
    resized bilinearly to the depth map, every 6th element of the flattened maps, nothing
    masked at the frame's edge — written out here for a flow linear in x and y, which the
    bilinear resize reproduces exactly at the depth pixels' centres."""
    ys, xs = np.mgrid[0:H, 0:W].astype(np.float32)
    flow = np.stack([0.1 * xs + 30.0, 0.05 * ys + 2.0], axis=-1)  # 30-94 px: leaves the view
    dh, dw = 108, 160
    depth = (1.0 + np.arange(dh * dw, dtype=np.float32) % 7).reshape(dh, dw)
    sample = sample_fit(0, flow, depth)

    idx = np.arange(0, dh * dw, 6)  # FIT_PIXEL_STEP over the flattened map
    col, row = idx % dw, idx // dw
    src_x, src_y = (col + 0.5) * (W / dw) - 0.5, (row + 0.5) * (H / dh) - 0.5
    assert sample.invz is not None
    np.testing.assert_allclose(sample.invz, 1.0 / depth.reshape(-1)[idx], rtol=1e-6)
    np.testing.assert_allclose(sample.u, 0.1 * src_x + 30.0, rtol=1e-5)
    np.testing.assert_allclose(sample.v, 0.05 * src_y + 2.0, rtol=1e-5)
    np.testing.assert_allclose(sample.x, src_x - (W - 1) / 2, atol=1e-4)
    np.testing.assert_allclose(sample.y, src_y - (H - 1) / 2, atol=1e-4)

    # the same flow without depth loses its right-hand points to the border ...
    assert np.isnan(sample_fit(0, flow, None).u).any()
    # ... and no border width changes the depth path
    for border in (0, 10 * FIT_BORDER_PX):
        monkeypatch.setattr(motion_samples, "FIT_BORDER_PX", border)
        again = sample_fit(0, flow, depth)
        for field in ("x", "y", "u", "v", "invz"):
            assert np.array_equal(getattr(again, field), getattr(sample, field)), (border, field)


def test_a_fast_pair_is_resampled_short() -> None:
    assert not needs_short_pair(_uniform(FIT_SHORT_PAIR_PX * 0.9))
    assert needs_short_pair(_uniform(0.0, FIT_SHORT_PAIR_PX * 1.1))
    half = _uniform(30.0)
    half[: H // 2] = 0.0  # the median reads the typical point, not the fastest
    assert needs_short_pair(half)
    half[: H // 2 + 8] = 0.0
    assert not needs_short_pair(half)


def test_each_flow_component_is_kept_where_the_image_has_gradient_along_it() -> None:
    # left half: vertical stripes (horizontal gradient: u is measurable, v is not); right
    # half: horizontal stripes (the other way round)
    ys, xs = np.mgrid[0:H, 0:W]
    stripes = np.where(xs < W // 2, (xs // 3) % 2, (ys // 3) % 2)
    image = (60 + 120 * stripes).astype(np.uint8)
    plain = sample_fit(0, _uniform(3.0, 0.5), None)
    sample = sample_fit(0, _uniform(3.0, 0.5), None, texture=texture_grid(image))
    inside = np.isfinite(plain.u)
    left = inside & (sample.x < -24)
    right = inside & (sample.x > 24)
    assert left.sum() > 20 and right.sum() > 20
    assert np.isfinite(sample.u[left]).all() and np.isnan(sample.v[left]).all()
    assert np.isnan(sample.u[right]).all() and np.isfinite(sample.v[right]).all()
    assert np.array_equal(np.isnan(sample.u[~inside]), np.ones((~inside).sum(), bool))

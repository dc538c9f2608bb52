"""DIS from the pair's global shift (docs/methods.md#cpu-defaults-and-backends): a fast pair
that DIS loses from rest is found, a slow pair is plain DIS bit for bit, and the result does
not depend on the pairs before it."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from streameval.perception.flow import DIS_PRIOR_MIN_PX, dis_fast, global_shift


def _texture(sigma: float) -> np.ndarray:
    rng = np.random.default_rng(0)
    noise = rng.integers(0, 255, (432, 1000)).astype(np.float32)
    blurred = cv2.GaussianBlur(noise, (0, 0), sigmaX=sigma)
    return np.asarray(cv2.normalize(blurred, None, 0, 255, cv2.NORM_MINMAX), np.uint8)


def _pair(shift: int, sigma: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    tex = _texture(sigma)
    a = np.ascontiguousarray(tex[:, 100:740])
    b = np.ascontiguousarray(tex[:, 100 - shift : 740 - shift])  # content moves right
    return a, b


def _plain(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_FAST)  # type: ignore[attr-defined]
    return np.asarray(dis.calc(a, b, None))


@pytest.mark.parametrize("shift", [50, 64])
def test_a_fast_pair_is_found_from_its_global_shift(shift: int) -> None:
    a, b = _pair(shift)
    assert np.mean(np.abs(_plain(a, b)[..., 0] - shift) < 1.0) < 0.6  # DIS from rest loses it
    flow = dis_fast()(a, b)
    assert np.mean(np.abs(flow[..., 0] - shift) < 1.0) > 0.9
    moved = global_shift(a, b)
    assert moved is not None and abs(moved[0] - shift) < 1.0 and abs(moved[1]) < 1.0


def test_a_slow_pair_is_plain_dis_bit_for_bit() -> None:
    a, b = _pair(int(DIS_PRIOR_MIN_PX) - 4, sigma=2.0)
    assert np.array_equal(dis_fast()(a, b), _plain(a, b))


def test_the_flow_does_not_depend_on_earlier_pairs() -> None:
    fast, slow = _pair(50), _pair(6, sigma=2.0)
    fresh_fast, fresh_slow = dis_fast()(*fast), dis_fast()(*slow)
    used = dis_fast()
    for pair in (slow, fast, slow, _pair(36), fast):
        used(*pair)
    assert np.array_equal(used(*fast), fresh_fast)
    assert np.array_equal(used(*slow), fresh_slow)

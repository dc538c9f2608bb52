"""The procedural world starting from a case image: the first frame is the image's centre crop
(as ``cv2.resize`` maps it), its depth is the picture's, and the keys move over it."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from streameval.worlds.procedural_world import ProceduralWorld


def _image(width: int, height: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (max(2, height // 12), max(2, width // 12), 3), dtype=np.uint8)
    return np.asarray(cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC))


def _centre_crop(image: np.ndarray, width: int, height: int) -> np.ndarray:
    ih, iw = image.shape[:2]
    if iw * height > ih * width:  # wider than the frame: crop columns
        cw = round(ih * width / height)
        x0 = (iw - cw) // 2
        crop = image[:, x0 : x0 + cw]
    else:
        ch = round(iw * height / width)
        y0 = (ih - ch) // 2
        crop = image[y0 : y0 + ch]
    return np.asarray(cv2.resize(crop, (width, height), interpolation=cv2.INTER_AREA))


@pytest.mark.parametrize(("width", "height"), [(1024, 768), (1920, 1080), (1024, 1024), (300, 900)])
def test_the_first_frame_is_the_case_image(width: int, height: int) -> None:
    image = _image(width, height, seed=width + height)
    world = ProceduralWorld()
    plain = world.step("-").image
    world.reset(image=image, prompt="First-person view. A test picture.")
    first = world.step("-")
    want = _centre_crop(image, world.width, world.height)
    diff = np.abs(first.image.astype(np.int16) - want).mean()
    assert diff < 6.0, diff
    assert np.abs(plain.astype(np.int16) - want).mean() > 40.0  # the town alone is not it
    # the picture stands where the frame's bottom row meets the ground
    k = world.intrinsics
    distance = world.config.camera_height / ((world.height - 1 - k[1, 2]) / k[1, 1])
    assert first.depth[world.height // 2, world.width // 2] == pytest.approx(distance, rel=1e-5)


def test_keys_move_over_the_picture_and_a_reset_without_image_is_the_plain_world() -> None:
    world = ProceduralWorld()
    world.reset(image=_image(1024, 768, seed=1))
    start = world.step("-").depth[216, 320]
    for _ in range(16):  # one second back
        frame = world.step("S")
    assert frame.depth[216, 320] == pytest.approx(start + world.config.forward_speed, rel=1e-4)
    world.reset()
    again = [world.step(k).image for k in "WWLL"]
    fresh = ProceduralWorld()
    assert all((a == fresh.step(k).image).all() for a, k in zip(again, "WWLL", strict=True))

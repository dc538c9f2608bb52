"""Same-seed identity's kernel: per-frame PSNR against a naive reference, and the comparison of
recordings (identical, different, of different lengths, missing)."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
import pytest
from streameval.replay.identity import compare_rollouts, frame_psnr

from tests.replay.replay_synth import moving_texture, write_actions, write_meta


def naive_psnr(a: np.ndarray, b: np.ndarray) -> float:
    total = 0.0
    for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist(), strict=True):
        total += (x - y) ** 2
    mse = total / a.size
    return math.inf if mse == 0 else 10 * math.log10(255**2 / mse)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_psnr_matches_a_naive_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)
    b = np.clip(a.astype(int) + rng.integers(-9, 10, a.shape), 0, 255).astype(np.uint8)
    assert frame_psnr(a, b) == pytest.approx(naive_psnr(a, b), rel=1e-12)
    assert frame_psnr(a, a) == math.inf
    assert frame_psnr(np.zeros_like(a), np.full_like(a, 255)) == 0.0
    with pytest.raises(ValueError):
        frame_psnr(a, a[:3])


def _rollout(folder: Path, frames: list[np.ndarray]) -> Path:
    """A rollout of PNG frames: lossless, as a recording's video decodes."""
    write_meta(folder, fps=16)
    (folder / "frames").mkdir()
    for i, frame in enumerate(frames):
        cv2.imwrite(str(folder / "frames" / f"{i:06d}.png"), frame[:, :, ::-1])
    write_actions(folder, ["W"] * len(frames))
    return folder


def test_recordings_compared_frame_by_frame(tmp_path: Path) -> None:
    frames = moving_texture(12, 24, 32)
    first = _rollout(tmp_path / "a", frames)
    same = _rollout(tmp_path / "b", frames)
    found = compare_rollouts("ep", [first, same])
    assert found.identical is True and found.frames == (12, 12) and found.psnr_min is None
    assert found.line() == "ep: 2 rollouts identical (12 frames each)"

    changed = [f.copy() for f in frames]
    changed[5][0, 0] ^= 0x10  # one pixel of one frame
    found = compare_rollouts("ep", [first, same, _rollout(tmp_path / "c", changed)])
    assert found.identical is False and found.differing_frames == 1 and found.rollouts == 3
    assert found.psnr_min == pytest.approx(naive_psnr(frames[5], changed[5]), abs=1e-3)
    assert math.isfinite(found.psnr_min) and found.psnr_min == found.psnr_median
    assert "NOT identical: 1 frame(s) differ" in found.line()

    shorter = compare_rollouts("ep", [first, _rollout(tmp_path / "d", frames[:10])])
    assert shorter.identical is False and shorter.frames == (12, 10)
    assert shorter.differing_frames == 2 and shorter.psnr_min is None

    missing = compare_rollouts("ep", [first, tmp_path / "nowhere"])
    assert missing.identical is None and missing.reason == f"no recording at {tmp_path / 'nowhere'}"

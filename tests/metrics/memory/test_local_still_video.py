"""The still-video floor (docs/methods.md#still-video-floor) on real video: a still x264 CRF-18
rollout is ``frozen``, whatever the scene.

Real components: PyAV/libx264 encodes the still frames, the decoded frames go through the
analysis resize, DIS flow and the Sx/Srad means, then Local Memory.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from streameval.metrics.memory.local_memory import MOTION_FLOOR_PX, local_memory
from streameval.perception.analysis import to_analysis_gray
from streameval.perception.flow import DisFlow
from streameval.perception.signals import flow_signals
from tests.replay.replay_synth import h264_roundtrip

FPS = 16


def _scene(kind: str, rng: np.random.Generator) -> np.ndarray:
    h, w = 432, 640
    if kind == "noise":
        small = rng.integers(0, 256, (h // 8, w // 8, 3), dtype=np.uint8)
        return np.asarray(cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC))
    if kind == "flat":
        img = np.full((h, w, 3), 90, np.uint8)
        for _ in range(6):
            x, y = int(rng.integers(0, w)), int(rng.integers(0, h))
            img[y : y + 150, x : x + 200] = rng.integers(0, 256, 3)
        return img
    if kind == "detail":
        return rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    y = np.linspace(0.0, 1.0, h)[:, None]
    sky = np.stack([0.4 + 0.5 * y, 0.6 + 0.3 * y, 0.9 - 0.4 * y], axis=-1) * np.ones((1, w, 1))
    return np.clip(255 * sky + rng.integers(-6, 6, (h, w, 3)), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("kind", ["noise", "flat", "detail", "gradient"])
def test_still_lossy_video_is_frozen(kind: str) -> None:
    rng = np.random.default_rng(len(kind))
    decoded = h264_roundtrip([_scene(kind, rng)] * 48, crf=18, fps=FPS)
    grey = [to_analysis_gray(f) for f in decoded]
    dis = DisFlow("fast")
    signals = np.array([flow_signals(dis(grey[i], grey[i + 2])) for i in range(len(grey) - 2)])
    mag = np.hypot(signals[:, 0], signals[:, 1])
    assert mag.mean() < MOTION_FLOOR_PX / 10  # codec noise sits far below the floor
    res = local_memory(signals[:, 0], signals[:, 1], np.ones((len(grey), 8)), [], FPS)
    assert (res.status, res.reason) == ("not_applicable", "frozen")

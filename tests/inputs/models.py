"""Misbehaving in-process models for ``attach python:tests.inputs.models:NAME``
(docs/cli.md#bad-input).

Each factory is one defect a user's research code really shows: raising in the factory or
``reset()``, ``SystemExit`` from ``step()``, a ``step()`` that never returns, frames that change
size, per-frame geometry of the wrong shape, absurd fps. The good base model moves a texture
sideways so a short episode scores.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

H, W = 48, 64


class Sliding:
    """A valid model: a random texture that slides with A/D."""

    fps = 16.0

    def __init__(self) -> None:
        rng = np.random.default_rng(0)
        self.canvas = rng.integers(0, 255, size=(H, 4 * W, 3), dtype=np.uint8)
        self.x = W
        self.steps = 0

    def reset(self) -> None:
        self.x = W

    def step(self, key: str) -> Any:
        self.steps += 1
        self.x = int(np.clip(self.x + {"A": -2, "D": 2}.get(key, 0), 0, 3 * W))
        return np.ascontiguousarray(self.canvas[:, self.x : self.x + W])


def _mark(steps: int, at: int) -> None:
    """Tell a waiting test (``STREAMEVAL_TEST_MARK``) that ``at`` frames were stepped: a
    signal sent after it lands mid-episode however slow the machine is."""
    mark = os.environ.get("STREAMEVAL_TEST_MARK")
    if mark and steps == at:
        Path(mark).write_text(str(steps))


def good() -> Sliding:
    return Sliding()


def factory_raises() -> Sliding:
    raise RuntimeError("weights not found")


def factory_exits() -> Sliding:
    raise SystemExit(4)


class _ResetRaises(Sliding):
    def reset(self) -> None:
        raise ValueError("cannot reset")


def reset_raises() -> Sliding:
    return _ResetRaises()


class _StepExits(Sliding):
    def step(self, key: str) -> Any:
        if self.steps >= 5:
            raise SystemExit(3)
        return super().step(key)


def step_exits() -> Sliding:
    return _StepExits()


class _StepHangs(Sliding):
    """Frames for a while, then a ``step()`` that never returns (until the process ends)."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.after = after
        self._never = threading.Event()

    def step(self, key: str) -> Any:
        _mark(self.steps, self.after)
        if self.steps >= self.after:
            self._never.wait()
        return super().step(key)


def step_hangs() -> Sliding:
    return _StepHangs(after=20)


class _Slow(Sliding):
    """A model that takes 20 ms a frame: long enough to be interrupted mid-episode."""

    def step(self, key: str) -> Any:
        time.sleep(0.02)
        _mark(self.steps, 30)
        return super().step(key)


def slow() -> Sliding:
    return _Slow()


class _Resizes(Sliding):
    def step(self, key: str) -> Any:
        frame = super().step(key)
        return frame[:, : W - 8] if self.steps > 10 else frame


def resizes() -> Sliding:
    return _Resizes()


class _Tiny(Sliding):
    def step(self, key: str) -> Any:
        super().step(key)
        return np.zeros((8, 8, 3), np.uint8)


def tiny_frames() -> Sliding:
    return _Tiny()


@dataclass
class _Frame:
    image: npt.NDArray[np.uint8]
    pose: Any = None
    intrinsics: Any = None
    depth: Any = None


class _BadPose(Sliding):
    def step(self, key: str) -> Any:
        return _Frame(super().step(key), pose=np.eye(3))


def bad_pose() -> Sliding:
    return _BadPose()


class _BadIntrinsics(Sliding):
    def step(self, key: str) -> Any:
        return _Frame(super().step(key), intrinsics=[[1, 2], [3, 4]])


def bad_intrinsics() -> Sliding:
    return _BadIntrinsics()


class _BadDepth(Sliding):
    def step(self, key: str) -> Any:
        return _Frame(super().step(key), depth=np.zeros((2, 3, 4, 5), np.float32))


def bad_depth() -> Sliding:
    return _BadDepth()


class _MismatchedDepth(Sliding):
    """A 96×128 frame with a 3×3 depth map (an independent fuzzer: scored as if fine)."""

    def step(self, key: str) -> Any:
        image = np.ascontiguousarray(np.tile(super().step(key), (2, 2, 1)))  # 96×128
        return _Frame(image, depth=np.full((3, 3), 2.0, np.float32))


def mismatched_depth() -> Sliding:
    return _MismatchedDepth()


class _QuarterDepth(Sliding):
    """A valid model with depth at a quarter of the frame's size (resized as needed)."""

    def step(self, key: str) -> Any:
        return _Frame(super().step(key), depth=np.full((H // 4, W // 4), 2.0, np.float32))


def quarter_depth() -> Sliding:
    return _QuarterDepth()


class _FastFps(Sliding):
    fps = 1e9


def huge_fps() -> Sliding:
    return _FastFps()


class _SlowFps(Sliding):
    fps = 1e-9


def tiny_fps() -> Sliding:
    return _SlowFps()

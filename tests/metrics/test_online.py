"""ControlAccumulator: chunked updates == one-shot control_metrics, bit for bit (SPEC §4)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from streameval.metrics.control.kernels import MotionType, control_metrics
from streameval.metrics.online import ControlAccumulator


def make_episode(seed: int, fps: float) -> tuple[np.ndarray, np.ndarray, list[str]]:
    rng = random.Random(seed)
    keys: list[str] = []
    for _ in range(rng.randint(1, 5)):
        keys += [rng.choice("WSADLR-")] * rng.randint(1, int(15 * fps))
    n = max(0, len(keys) - 2)
    g = np.random.default_rng(seed)
    sx = g.normal(0.2, 1.0, size=n)
    srad = g.normal(-0.1, 1.0, size=n)
    sx[g.random(n) < 0.02] = np.nan
    return sx, srad, keys


def random_chunks(n: int, rng: random.Random) -> list[tuple[int, int]]:
    bounds, at = [], 0
    while at < n:
        size = rng.choice([0, 1, 1, 2, 3, 7, 16, 50, 333])
        bounds.append((at, min(n, at + size)))
        at += size
    return bounds


TYPES = {1: MotionType.from_p_trans(0.6), 2: None, 3: MotionType.from_p_trans(0.1, "sidecar")}


@pytest.mark.parametrize("fps", [16.0, 24.5])
@pytest.mark.parametrize("seed", range(10))
def test_chunked_updates_equal_one_shot(fps: float, seed: int) -> None:
    sx, srad, keys = make_episode(seed, fps)
    rng = random.Random(1000 + seed)
    acc = ControlAccumulator(fps)
    for lo, hi in random_chunks(sx.size, rng):
        acc.update(sx[lo:hi], srad[lo:hi], keys[lo:hi])
    for key in keys[sx.size :]:  # the last two frames have no signal of their own
        acc.add_frame_key(key)
    got = acc.compute(TYPES, final=True)
    want = control_metrics(sx, srad, keys, fps, TYPES)
    assert got == want
    for name in want:
        assert got[name].raw == want[name].raw  # bit-identical floats, not approx
        assert got[name].normalized == want[name].normalized


@pytest.mark.parametrize("seed", range(5))
def test_keys_ahead_of_signals(seed: int) -> None:
    fps = 16.0
    sx, srad, keys = make_episode(seed, fps)
    rng = random.Random(seed)
    acc = ControlAccumulator(fps)
    sent = 0
    for lo, hi in random_chunks(sx.size, rng):
        while sent < min(len(keys), hi + 2):  # frame i + 2 is sent before signal i exists
            acc.add_frame_key(keys[sent])
            sent += 1
        acc.update(sx[lo:hi], srad[lo:hi])
    for key in keys[sent:]:
        acc.add_frame_key(key)
    assert acc.frame_keys() == keys
    assert acc.compute(final=True) == control_metrics(sx, srad, keys, fps)


def test_provisional_until_final() -> None:
    acc = ControlAccumulator(16)
    acc.update(np.ones(100), np.zeros(100), ["A"] * 100)
    assert all(r.details["provisional"] is True for r in acc.compute().values())
    assert all(r.details["provisional"] is False for r in acc.compute(final=True).values())


def test_provisional_value_changes_as_the_episode_grows() -> None:
    # While A is the last segment it keeps its last second; once L starts, it loses it (the
    # sample exactly 1 s before the end stays, as in the reference).
    fps = 16
    acc = ControlAccumulator(fps)
    sx = np.concatenate([np.ones(300), np.linspace(1, 0, 20), np.ones(200)])
    acc.update(sx[:320], np.zeros(320), ["A"] * 320)
    before = acc.compute()["direction_accuracy_trans"].details["segments"][0]["window_end"]
    acc.update(sx[320:], np.zeros(200), ["L"] * 200)
    after = acc.compute()["direction_accuracy_trans"].details["segments"][0]["window_end"]
    assert (before, after) == (320, 305)


def test_reset_forgets_everything() -> None:
    acc = ControlAccumulator(16)
    acc.update(np.ones(50), np.ones(50), ["W"] * 50)
    acc.reset()
    assert (acc.n_signals, acc.n_frames) == (0, 0)
    assert all(r.status == "not_applicable" for r in acc.compute().values())
    acc.update(np.ones(50), np.ones(50), ["W"] * 50)
    assert acc.compute(final=True) == control_metrics(np.ones(50), np.ones(50), ["W"] * 50, 16)


def test_conflicting_key_is_rejected_atomically() -> None:
    acc = ControlAccumulator(16)
    for _ in range(5):
        acc.add_frame_key("W")
    with pytest.raises(ValueError, match="frame 3"):
        acc.update(np.ones(4), np.ones(4), ["W", "W", "W", "S"])
    assert (acc.n_signals, acc.n_frames) == (0, 5)


def test_signal_without_key_is_rejected_atomically() -> None:
    acc = ControlAccumulator(16)
    acc.add_frame_key("W")
    with pytest.raises(ValueError, match="need frame keys"):
        acc.update(np.ones(2), np.ones(2))
    assert acc.n_signals == 0


def test_chunk_validation() -> None:
    acc = ControlAccumulator(16)
    with pytest.raises(ValueError, match="srad chunk"):
        acc.update(np.ones(3), np.ones(2), ["W"] * 3)
    with pytest.raises(ValueError, match="keys chunk"):
        acc.update(np.ones(3), np.ones(3), ["W"] * 2)
    with pytest.raises(ValueError, match="unknown key"):
        acc.update(np.ones(1), np.ones(1), ["Q"])
    with pytest.raises(ValueError, match="1-D"):
        acc.update(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="fps"):
        ControlAccumulator(0)
    assert acc.n_signals == 0


def test_set_frame_keys() -> None:
    acc = ControlAccumulator(16)
    acc.update(np.ones(10), np.ones(10), ["W"] * 10)
    with pytest.raises(ValueError, match="signal i needs the key"):
        acc.set_frame_keys(["W"] * 9)
    acc.set_frame_keys(["S"] * 12)
    assert acc.frame_keys() == ["S"] * 12
    assert acc.compute(final=True) == control_metrics(np.ones(10), np.ones(10), ["S"] * 12, 16)


def test_storage_grows_by_doubling() -> None:
    acc = ControlAccumulator(16)
    for _ in range(1000):
        acc.update([0.5], [0.5], ["W"])
    capacity = acc._sx.capacity
    assert acc.n_signals == 1000
    assert capacity == 1024  # 256 doubled twice: O(n) memory, amortised O(1) append
    assert acc._sx.view().dtype == np.float64
    assert acc._keys.view().dtype == np.uint8

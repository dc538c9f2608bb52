"""The native-frame classifier (``metrics/native_frames.py``) against naive references and
synthetic streams whose truth is known: honest, doubled, tripled, interpolated, frozen."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from streameval.metrics.native_frames import (
    INTERPOLATED,
    MAX_MISFIT,
    MIN_SLOT_EVIDENCE,
    NATIVE,
    PERIODS,
    REPEAT,
    Cadence,
    FrameClassifier,
    class_string,
    classes_of,
    classify_frames,
    contexts,
    find_cadence,
    thumbnail,
)

ROWS, COLS = 36, 64


def _scene(n: int, seed: int = 0, speed: float = 3.0) -> list[np.ndarray]:
    """A textured scene panning ``speed`` pixels a frame (RGB uint8, 144×256): each frame a
    new view, as a moving camera's."""
    rng = np.random.default_rng(seed)
    wide = rng.integers(0, 256, size=(144, 256 + int(speed * n) + 8, 3), dtype=np.uint8)
    wide = ((wide.astype(np.float32) + np.roll(wide, 1, axis=1)) / 2).astype(np.uint8)
    return [wide[:, round(i * speed) : round(i * speed) + 256] for i in range(n)]


def _noisy(img: np.ndarray, rng: np.random.Generator, sigma: float = 1.0) -> np.ndarray:
    """Codec-like noise: each encode of a picture differs a little."""
    out = img.astype(np.float32) + rng.normal(0, sigma, img.shape)
    return np.clip(out.round(), 0, 255).astype(np.uint8)


def _thumbs(frames: list[np.ndarray]) -> np.ndarray:
    return np.stack([thumbnail(f) for f in frames])


def test_thumbnail_is_the_area_mean_of_the_grey_frame() -> None:
    rng = np.random.default_rng(1)
    grey = rng.integers(0, 256, size=(ROWS * 2, COLS * 2), dtype=np.uint8)
    thumb = thumbnail(grey)
    assert thumb.shape == (ROWS, COLS) and thumb.dtype == np.float32
    naive = np.empty((ROWS, COLS))
    for r in range(ROWS):
        for c in range(COLS):
            naive[r, c] = grey[2 * r : 2 * r + 2, 2 * c : 2 * c + 2].astype(float).mean()
    assert np.abs(thumb - naive).max() <= 0.5  # OpenCV rounds its area mean to uint8
    big = rng.integers(0, 256, size=(720, 1280, 3), dtype=np.uint8)
    assert thumbnail(big).shape == (ROWS, COLS)


def _naive_contexts(thumbs: np.ndarray) -> list[tuple[float, float, float]]:
    out = []
    t = len(thumbs)
    for i in range(t):
        a = thumbs[i].astype(np.float64)

        def mad(x: np.ndarray, y: np.ndarray) -> float:
            return float(
                sum(abs(float(p) - float(q)) for p, q in zip(x.ravel(), y.ravel(), strict=False))
                / x.size
            )

        diff = mad(a, thumbs[i - 1]) if i > 0 else np.inf
        if 0 < i < t - 1:
            mid = (thumbs[i - 1].astype(np.float64) + thumbs[i + 1]) / 2
            out.append((diff, mad(a, mid), mad(thumbs[i + 1], thumbs[i - 1])))
        else:
            out.append((diff, np.inf, np.inf))
    return out


def test_contexts_match_a_naive_loop() -> None:
    rng = np.random.default_rng(2)
    thumbs = rng.uniform(0, 255, size=(6, 4, 5)).astype(np.float32)
    for got, want in zip(contexts(thumbs), _naive_contexts(thumbs), strict=True):
        assert got.diff == pytest.approx(want[0], rel=1e-5)
        assert got.blend == pytest.approx(want[1], rel=1e-5)
        assert got.span == pytest.approx(want[2], rel=1e-5)


def _naive_cadence(positions: list[int], alike: list[bool]) -> Cadence | None:
    for period in PERIODS:
        for phase in range(period):
            native = [p % period == phase for p in positions]
            alike_other = sum(1 for n, a in zip(native, alike, strict=True) if a and not n)
            if sum(native) < MIN_SLOT_EVIDENCE or alike_other < MIN_SLOT_EVIDENCE:
                continue
            misfit = sum(1 for n, a in zip(native, alike, strict=False) if n == a)
            if misfit <= MAX_MISFIT * len(positions):
                return Cadence(period, phase)
    return None


def test_find_cadence_matches_a_naive_search() -> None:
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(0, 30))
        positions = sorted(rng.choice(60, size=n, replace=False).tolist())
        period, phase = int(rng.integers(2, 5)), int(rng.integers(0, 4))
        alike = [(p % period != phase % period) ^ bool(rng.random() < 0.05) for p in positions]
        got = find_cadence(np.array(positions, dtype=np.int64), np.array(alike, dtype=bool))
        assert got == _naive_cadence(positions, alike)


def _streamed(thumbs: np.ndarray, settle: int = 0) -> np.ndarray:
    clf = FrameClassifier(settle)
    out: list[int] = []
    for t in thumbs:
        out.extend(clf.push(t))
    out.extend(clf.flush())
    assert clf.counts == [out.count(NATIVE), out.count(REPEAT), out.count(INTERPOLATED)]
    return np.array(out, dtype=np.uint8)


def test_an_honest_moving_stream_is_all_native() -> None:
    rng = np.random.default_rng(4)
    frames = [_noisy(f, rng) for f in _scene(80)]
    classes = classify_frames(_thumbs(frames))
    assert (classes == NATIVE).all()
    assert np.array_equal(_streamed(_thumbs(frames)), classes)


def test_a_frozen_world_keeps_every_frame_native() -> None:
    rng = np.random.default_rng(5)
    still = _scene(1)[0]
    frames = [_noisy(still, rng) for _ in range(60)]
    assert (classify_frames(_thumbs(frames)) == NATIVE).all()
    # a moving start, then the world stops (no key held): still all native
    frames = [_noisy(f, rng) for f in _scene(30)] + [_noisy(still, rng) for _ in range(30)]
    assert (classify_frames(_thumbs(frames)) == NATIVE).all()


@pytest.mark.parametrize("period", [2, 3])
def test_a_repeating_stream_shows_its_cadence(period: int) -> None:
    rng = np.random.default_rng(6)
    frames = [_noisy(f, rng, 0.5) for f in _scene(60) for _ in range(period)]
    thumbs = _thumbs(frames)
    classes = classify_frames(thumbs)
    share = float((classes == REPEAT).mean())
    assert share == pytest.approx((period - 1) / period, abs=0.08)
    assert not (classes == INTERPOLATED).any()
    settled = classes[4 * period * 3 :]  # after the cadence is found: exactly the pattern
    assert class_string(settled).count("n") == len(settled) // period
    assert np.array_equal(_streamed(thumbs), classes)
    # judged once 24 frames are in, the first frames keep the pattern too
    early = classify_frames(thumbs, settle=24)
    assert int((early == NATIVE).sum()) == len(frames) // period
    assert np.array_equal(_streamed(thumbs, 24), early)
    assert np.array_equal(_streamed(thumbs[:10], 24), classify_frames(thumbs[:10], 24))


def test_a_doubling_stream_whose_world_stops_keeps_one_native_in_two() -> None:
    rng = np.random.default_rng(7)
    still = _scene(1)[0]
    natives = _scene(30) + [still] * 30
    frames = [_noisy(f, rng, 0.5) for f in natives for _ in range(2)]
    classes = classify_frames(_thumbs(frames))
    tail = classes[60:]
    assert (tail[::2] != tail[1::2]).all()  # the still half keeps the cadence: n r n r
    assert int((tail == NATIVE).sum()) == 30


def test_an_interpolating_stream_counts_its_blends() -> None:
    rng = np.random.default_rng(8)
    natives = _scene(50, speed=4.0)
    frames: list[np.ndarray] = []
    for a, b in itertools.pairwise(natives):
        blend = ((a.astype(np.float32) + b) / 2).round().astype(np.uint8)
        frames += [_noisy(a, rng, 0.5), _noisy(blend, rng, 0.5)]
    thumbs = _thumbs(frames)
    classes = classify_frames(thumbs)
    assert float((classes == INTERPOLATED).mean()) == pytest.approx(0.5, abs=0.1)
    assert np.array_equal(_streamed(thumbs), classes)


def test_class_strings_round_trip() -> None:
    classes = np.array([NATIVE, REPEAT, INTERPOLATED, NATIVE], dtype=np.uint8)
    assert class_string(classes) == "nrin"
    assert np.array_equal(classes_of("nrin"), classes)
    with pytest.raises(ValueError):
        classes_of("nx")

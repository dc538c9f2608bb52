"""Q-Align arithmetic and rollout drift (WorldMark quality, WorldAtlas drift) on hand-built
input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streameval.metrics.quality.kernels import (
    DRIFT_SEGMENTS,
    drift_segments,
    is_one_fps_frame,
    normalize_rating,
    one_fps_frames,
    rating_score,
    rollout_drift,
)


def test_rating_score_by_hand() -> None:
    logits = [2.0, 1.0, 0.0, -1.0, -3.0]  # excellent .. bad
    e = [math.exp(v) for v in logits]
    by_hand = (5 * e[0] + 4 * e[1] + 3 * e[2] + 2 * e[3] + 1 * e[4]) / sum(e)
    assert rating_score(logits) == pytest.approx(by_hand, abs=1e-12)
    # 4.2826... -> 82.07 on the master table
    assert normalize_rating(by_hand) == pytest.approx(100 * (by_hand - 1) / 4, abs=1e-12)


def test_rating_score_matches_the_reference_weights() -> None:
    """The Q-Align scorer weights the softmax by (1, .75, .5, .25, 0): 100 × that equals
    ``100·(x − 1)/4`` with x weighted by (5, 4, 3, 2, 1)."""
    rng = np.random.default_rng(3)
    for _ in range(50):
        logits = rng.normal(0, 4, 5)
        p = np.exp(logits - logits.max())
        p /= p.sum()
        reference = 100 * float(p @ np.array([1, 0.75, 0.5, 0.25, 0.0]))
        assert normalize_rating(rating_score(logits)) == pytest.approx(reference, abs=1e-9)


def test_rating_score_extremes_and_stability() -> None:
    assert rating_score([1000.0, 0, 0, 0, 0]) == pytest.approx(5.0)
    assert rating_score([0, 0, 0, 0, 1000.0]) == pytest.approx(1.0)
    assert rating_score([7.0] * 5) == pytest.approx(3.0)  # uniform -> the middle
    with pytest.raises(ValueError):
        rating_score([1.0, 2.0])
    with pytest.raises(ValueError):
        rating_score([math.nan, 0, 0, 0, 0])


def test_one_fps_frames_follow_the_reference_sampling() -> None:
    # int(fps * i) for i < int(n / fps): 16 fps, 50 frames -> seconds 0, 1, 2 (not the 3rd)
    assert one_fps_frames(50, 16.0) == [0, 16, 32]
    assert one_fps_frames(75, 24.0) == [0, 24, 48]
    assert one_fps_frames(100, 29.97) == [0, 29, 59]
    for fps in (16.0, 24.0, 29.97, 7.5):
        wanted = set(one_fps_frames(400, fps))
        streamed = {i for i in range(400) if is_one_fps_frame(i, fps)}
        assert wanted <= streamed and len(streamed - wanted) <= 1  # the trailing partial second


def test_drift_segments_cover_up_to_300_frames() -> None:
    assert drift_segments(9) is None
    seg = drift_segments(10)
    assert seg is not None and [s.tolist() for s in seg] == [[i] for i in range(10)]
    seg = drift_segments(1000)
    assert seg is not None and len(seg) == DRIFT_SEGMENTS
    flat = np.concatenate(seg)
    assert flat.size == 300 and flat[0] == 0 and flat[-1] == 999
    assert np.all(np.diff(flat) > 0)
    assert {s.size for s in seg} == {30}


def test_constant_sequence_has_no_drift() -> None:
    result = rollout_drift([3.7] * 10, {})
    assert result.status == "official"
    assert result.raw == 0.0 and result.normalized == 100.0


def test_drift_by_hand() -> None:
    scores = [4.0, 4.2, 3.9, 3.5, 3.0, 3.1, 2.8, 2.5, 2.6, 2.4]
    result = rollout_drift(scores, {"backend": "test"})
    assert result.raw == pytest.approx((4.2 - 2.4) / 4.2)
    assert result.normalized == pytest.approx(100 * (1 - (4.2 - 2.4) / 4.2))
    assert result.details["best"] == 4.2 and result.details["worst"] == 2.4
    # a negative best (sharpness never is, but a signed score may be): |best|
    neg = rollout_drift([-1.0, -2.0, *([-1.5] * 8)], {})
    assert neg.raw == pytest.approx((-1.0 - -2.0) / 1.0)
    # drift above 1 clamps the normalised value at 0
    assert rollout_drift([1.0, -5.0, *([0.0] * 8)], {}).normalized == 0.0


def test_drift_not_applicable() -> None:
    short = rollout_drift([4.0] * 9, {})
    assert short.status == "not_applicable" and "needs 10" in (short.reason or "")
    zero = rollout_drift([0.0] * 10, {})
    assert zero.status == "not_applicable" and zero.raw is None
    assert rollout_drift([1.0, math.nan, *([1.0] * 8)], {}).status == "missing"

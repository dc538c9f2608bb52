"""Still control segments score zero (docs/methods.md#still-control-segments-score-zero).

Golden-style cases of our own: the reference's formulas with the one departure applied. A
segment whose stable-zone mean flow magnitude is below the still-video floor scores direction
accuracy 0 and purity 0 with reason ``no_motion`` (what a noise-free still video gives,
``0 / (0 + 1e-9)``); stability keeps the reference's value; a segment just above the floor is
scored as the reference scores it. The online accumulator gives the same entries.
"""

from __future__ import annotations

import numpy as np
import pytest

from streameval.constants import MOTION_FLOOR_PX
from streameval.metrics.control.kernels import MotionType, control_metrics
from streameval.metrics.control.online import IncrementalControl
from streameval.metrics.control.segment import (
    direction_accuracy_segment,
    direction_purity_segment,
)

FPS = 16.0


def _codec_noise(n: int, seed: int, bias: float) -> np.ndarray:
    """Codec noise with a sign: tiny, with a mean ``bias`` (what scored 15–40 before)."""
    return bias + np.random.default_rng(seed).normal(0.0, 2e-4, size=n)


def _segments(result: object) -> list[dict[str, object]]:
    return result.details["segments"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("keys", ["A", "L", "W", "ADA", "LRL", "WS"])
def test_a_still_video_scores_zero_accuracy_and_purity(keys: str) -> None:
    frame_keys = [k for k in keys for _ in range(int(8 * FPS))]
    n = len(frame_keys) - 2
    sx, srad = _codec_noise(n, 1, 3e-4), _codec_noise(n, 2, -2e-4)
    types = {j: MotionType.from_p_trans(0.5) for j in range(len(keys))}
    res = control_metrics(sx, srad, frame_keys, FPS, types)
    for metric in ("direction_accuracy", "direction_purity"):
        for pool in ("trans", "rot"):
            r = res[f"{metric}_{pool}"]
            if r.status != "official":
                continue
            assert r.normalized == 0.0, (metric, pool)
            for e in _segments(r):
                assert e["value"] == 0.0 and e["reason"] == "no_motion"
                assert e["motion"] < MOTION_FLOOR_PX
    # the noise-free still video: the reference's own formulas give the same 0
    zero = np.zeros(int(8 * FPS))
    assert direction_accuracy_segment(zero, zero, 1.0).gated == 0.0
    assert direction_purity_segment(0.0, 0.0, "lat", 0.5).score == 0.0


def test_the_floor_is_on_mean_flow_magnitude_over_the_stable_zone() -> None:
    """Just below: 0 with no_motion; just above: the reference's value (dir = 1, purity = 1)."""
    frame_keys = ["A"] * int(6 * FPS)
    n = len(frame_keys) - 2
    for scale, still in ((0.99, True), (1.01, False)):
        sx = np.full(n, scale * MOTION_FLOOR_PX)
        res = control_metrics(sx, np.zeros(n), frame_keys, FPS, {0: MotionType.from_p_trans(1.0)})
        acc = _segments(res["direction_accuracy_trans"])[0]
        pur = _segments(res["direction_purity_trans"])[0]
        stab = _segments(res["motion_stability_trans"])[0]
        assert stab["reason"] is None and stab["value"] == pytest.approx(1.0)
        if still:
            assert (acc["value"], pur["value"]) == (0.0, 0.0)
            assert acc["reason"] == pur["reason"] == "no_motion"
            assert acc["dir"] == pytest.approx(1.0)  # the reference's number stays in details
        else:
            assert acc["value"] == pytest.approx(1.0) and pur["value"] == pytest.approx(1.0)
            assert acc["reason"] is None and pur["reason"] is None


def test_only_the_still_segment_of_an_episode_is_zeroed() -> None:
    """A→D where the model froze during D: A keeps its score, D scores 0."""
    half = int(8 * FPS)
    frame_keys = ["A"] * half + ["D"] * half
    n = len(frame_keys) - 2
    sx = np.r_[np.full(half, 3.0), _codec_noise(n - half, 3, -3e-4)]
    res = control_metrics(sx, np.zeros(n), frame_keys, FPS)
    a, d = _segments(res["direction_accuracy_trans"])
    assert a["value"] == pytest.approx(1.0) and a["reason"] is None
    assert d["value"] == 0.0 and d["reason"] == "no_motion"
    assert res["direction_accuracy_trans"].normalized == pytest.approx(50.0)


def test_online_equals_offline_with_still_segments() -> None:
    seg = int(5 * FPS)
    frame_keys = [k for k in "ALDRWS" for _ in range(seg)]
    n = len(frame_keys) - 2
    g = np.random.default_rng(4)
    sx, srad = g.normal(0.5, 1.0, size=n), g.normal(0.0, 1.0, size=n)
    for j in (1, 3, 4):  # L, R and W stand still
        sx[j * seg : (j + 1) * seg] = _codec_noise(seg, j, 1e-4)[: max(0, min(seg, n - j * seg))]
        srad[j * seg : (j + 1) * seg] = _codec_noise(seg, j + 9, 1e-4)[
            : max(0, min(seg, n - j * seg))
        ]
    types = {j: MotionType.from_p_trans(0.3) for j in range(6)}
    inc = IncrementalControl(FPS)
    for f in range(1, len(frame_keys) + 1, 7):
        m = max(0, f - 2)
        got = inc.compute(sx[:m], srad[:m], frame_keys[:f], lambda s: types.get(s.index))
        want = control_metrics(sx[:m], srad[:m], frame_keys[:f], FPS, types, provisional=True)
        for name in ("direction_accuracy", "direction_purity"):
            for pool in ("trans", "rot"):
                assert got[f"{name}_{pool}"] == want[f"{name}_{pool}"]
    final = control_metrics(sx, srad, frame_keys, FPS, types)
    reasons = [e["reason"] for e in _segments(final["direction_accuracy_rot"])]
    assert reasons == ["no_motion", "no_motion"]

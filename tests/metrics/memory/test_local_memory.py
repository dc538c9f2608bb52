"""Local Memory (docs/methods.md#local_memory, statuses docs/methods.md#statuses) against a naive
reference written from docs/methods.md.

The reference uses plain Python loops over lists and shares no helper with the implementation.
Conventions checked (module docstring of ``local_memory``, the reference's rules,
docs/methods.md#local_memory): signal index i is sampled when the running sum reaches the threshold,
which starts at δ and grows by δ per sample (one sample per index, catching up after a large step);
a missing sample adds nothing (docs/methods.md#missing-samples-are-skipped); a pair is excluded when
either end lies within ±G frames of a cut.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from typing import Any

import numpy as np
import pytest

from streameval.metrics.memory.local_memory import (
    cut_guard_frames,
    local_memory,
    motion_indexed_samples,
    motion_step,
)
from tests.metrics.helpers import model_value

# ------------------------------------------------------------------------------------------
# Naive reference
# ------------------------------------------------------------------------------------------


def n_samples(sx: list[float], srad: list[float], fps: float) -> tuple[float, list[int]]:
    mags = []
    for a, b in zip(sx, srad, strict=True):
        mags.append(math.sqrt(a * a + b * b) if math.isfinite(a) and math.isfinite(b) else None)
    finite = [m for m in mags if m is not None]
    # numpy's (pairwise) mean and a threshold grown by repeated addition, as the reference:
    # when the total arc is an exact multiple of δ the last sample hangs on these last bits.
    delta = float(np.mean(finite)) * 0.5 * fps
    frames = []
    cum = 0.0
    threshold = delta
    for i, m in enumerate(mags):
        if m is not None:
            cum += m
        if cum >= threshold:
            frames.append(i)
            threshold += delta
    return delta, frames


def n_cos_dist(u: list[float], v: list[float]) -> float | None:
    if any(not math.isfinite(x) for x in u + v):
        return None
    nu = math.sqrt(sum(x * x for x in u))
    nv = math.sqrt(sum(x * x for x in v))
    return 1.0 - sum(a * b for a, b in zip(u, v, strict=True)) / (nu * nv)


def n_local(
    sx: list[float], srad: list[float], emb: list[list[float]], cuts: list[int], fps: float
) -> dict[str, Any]:
    _, frames = n_samples(sx, srad, fps)
    guard = int(0.5 * fps + 0.5)
    counted = flagged = 0
    excluded = []
    for a, b in itertools.pairwise(frames):
        near = any(abs(a - c) <= guard or abs(b - c) <= guard for c in cuts)
        d = n_cos_dist(emb[a], emb[b])
        if near or d is None:
            excluded.append([a, b])
            continue
        counted += 1
        flagged += d > 0.10
    rate = flagged / counted if counted else None
    cut = 1.0 if cuts else 0.0
    return {
        "frames": frames,
        "rate": rate,
        "excluded": excluded,
        "score": 100 * (1 - cut) * (1 - (rate or 0.0)),
    }


def random_episode(
    rng: random.Random, n: int, nan_every: int = 0
) -> tuple[list[float], list[float], list[list[float]]]:
    sx = [rng.gauss(0.0, 2.0) for _ in range(n)]
    srad = [rng.gauss(0.0, 1.0) for _ in range(n)]
    if nan_every:
        for i in range(3, n, nan_every):
            sx[i] = math.nan
    # A slowly drifting descriptor with occasional jumps, so some distances exceed 0.10.
    emb = []
    base = [rng.gauss(0, 1) for _ in range(8)]
    for _ in range(n + 2):
        if rng.random() < 0.02:
            base = [rng.gauss(0, 1) for _ in range(8)]
        row = [x + 0.15 * rng.gauss(0, 1) for x in base]
        norm = math.sqrt(sum(x * x for x in row))
        emb.append([x / norm for x in row])
    return sx, srad, emb


# ------------------------------------------------------------------------------------------
# Motion-indexed sampling
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fps", [16.0, 24.0, 10.0])
@pytest.mark.parametrize("seed", range(5))
def test_motion_indexed_samples_match_reference(fps: float, seed: int) -> None:
    rng = random.Random(seed)
    # 301 samples: the total arc is not an exact multiple of δ at these rates, so the last
    # sample does not hang on the last bit of the mean (golden "fragile_sampling").
    sx, srad, _ = random_episode(rng, 301, nan_every=17 if seed % 2 else 0)
    delta, frames = n_samples(sx, srad, fps)
    mag = np.sqrt(np.square(sx) + np.square(srad))
    assert motion_step(mag, fps) == pytest.approx(delta, rel=1e-12)
    assert motion_indexed_samples(mag, fps).tolist() == frames


def test_constant_motion_samples_every_half_second() -> None:
    # Constant magnitude: δ = 0.5 s × fps samples of motion; the first δ is reached at index 7
    # (8 samples summed) at 16 fps, then one sample every 8 indices.
    mag = np.full(160, 3.0)
    assert motion_indexed_samples(mag, 16.0).tolist() == list(range(7, 160, 8))
    assert motion_indexed_samples(mag, 24.0).tolist() == list(range(11, 160, 12))


def test_a_jump_over_several_multiples_catches_up_one_index_at_a_time() -> None:
    # The reference takes at most one sample per index: after the spike at index 10 the next
    # indices are sampled one by one until the threshold has caught up with the running sum.
    mag = np.array([0.0] * 10 + [100.0] + [0.0] * 10 + [1.0] * 20)
    delta = motion_step(mag, 16.0)
    assert delta is not None
    frames = motion_indexed_samples(mag, 16.0).tolist()
    n_multiples = int(100.0 // delta)
    assert frames[:n_multiples] == list(range(10, 10 + n_multiples))
    assert len(frames) == len(set(frames))


def test_no_motion_samples_nothing() -> None:
    assert motion_indexed_samples(np.zeros(50), 16.0).tolist() == []
    assert motion_indexed_samples(np.full(5, np.nan), 16.0).tolist() == []


# ------------------------------------------------------------------------------------------
# Episode scores
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fps", [16.0, 24.0])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("cuts", [[], [40], [5, 130, 131, 250]])
def test_local_memory_matches_reference(fps: float, seed: int, cuts: list[int]) -> None:
    rng = random.Random(100 + seed)
    sx, srad, emb = random_episode(rng, 301, nan_every=23 if seed % 3 == 0 else 0)
    if seed % 2:
        for f in range(0, len(emb), 7):
            emb[f] = [math.nan] * len(emb[f])
    ref = n_local(sx, srad, emb, cuts, fps)
    res = local_memory(sx, srad, np.asarray(emb, dtype=np.float32), cuts, fps)
    assert res.status == "official"
    det = res.details
    assert det["sampled_frames"] == ref["frames"]
    assert det["hard_cut"] is bool(cuts)
    assert [e["pair"] for e in det["excluded_pairs"]] == ref["excluded"]
    if ref["rate"] is None:
        assert det["mutation_rate"] is None
    else:
        assert det["mutation_rate"] == pytest.approx(ref["rate"], abs=1e-12)
    assert res.normalized == pytest.approx(ref["score"], abs=1e-9)
    assert det["cut_guard_frames"] == (8 if fps == 16 else 12)
    json.dumps(res.to_json(), allow_nan=False)


def test_flagged_pairs_and_cut_guard_by_construction() -> None:
    # Constant motion at 16 fps: samples at 7, 15, ..., 159 (20). The descriptor changes
    # abruptly at frame 44 (pair 39-47 mutates) and at frame 100 (pair 95-103), and a cut at 100
    # guards the pairs with an end within ±8 frames of it: 87-95, 95-103, 103-111.
    n = 160
    mag = np.full(n, 2.0)
    emb = np.zeros((n + 2, 4), dtype=np.float32)
    emb[:, 0] = 1.0
    emb[44:, :] = [0.0, 1.0, 0.0, 0.0]
    emb[100:, :] = [0.0, 0.0, 1.0, 0.0]
    res = local_memory(mag, np.zeros(n), emb, [100], 16.0)
    det = res.details
    assert det["flagged_pairs"] == [[39, 47]]
    assert [e["pair"] for e in det["excluded_pairs"]] == [[87, 95], [95, 103], [103, 111]]
    assert det["n_counted"] == 19 - 3
    assert det["mutation_rate"] == pytest.approx(1 / 16)
    assert det["hard_cut"] is True
    assert res.normalized == 0.0  # a hard cut zeroes the episode

    res_nocut = local_memory(mag, np.zeros(n), emb, [], 16.0)
    assert res_nocut.details["flagged_pairs"] == [[39, 47], [95, 103]]
    assert res_nocut.normalized == pytest.approx(100 * (1 - 2 / 19))


def test_frozen_is_not_applicable() -> None:
    # Motion only in the last 3 samples: at most one sample per index -> 3 samples, frozen.
    mag = np.zeros(200)
    mag[-3:] = 5.0
    res = local_memory(mag, np.zeros(200), np.ones((202, 4)), [], 16.0)
    assert res.status == "not_applicable"
    assert res.reason == "frozen"
    assert res.raw is None and res.normalized is None
    assert len(res.details["sampled_frames"]) < 5


def test_cuts_none_is_missing_never_no_cut() -> None:
    rng = random.Random(7)
    sx, srad, emb = random_episode(rng, 200)
    res = local_memory(sx, srad, np.asarray(emb), None, 16.0)
    assert res.status == "missing"
    assert res.reason == "cut detector failed/unavailable"
    assert res.normalized is None


def test_embeddings_none_or_all_nan_is_missing() -> None:
    rng = random.Random(8)
    sx, srad, _ = random_episode(rng, 200)
    assert local_memory(sx, srad, None, [], 16.0).status == "missing"
    res = local_memory(sx, srad, np.full((202, 4), np.nan), [], 16.0)
    assert res.status == "missing"


def test_nan_rows_are_skipped_not_counted() -> None:
    n = 160
    mag = np.full(n, 2.0)
    emb = np.tile(np.array([1.0, 0.0], dtype=np.float32), (n + 2, 1))
    emb[[15, 16, 63]] = np.nan  # sampled frames 15 and 63 are not embedded
    res = local_memory(mag, np.zeros(n), emb, [], 16.0)
    det = res.details
    assert res.status == "official"
    skipped = [e["pair"] for e in det["excluded_pairs"]]
    assert skipped == [[7, 15], [15, 23], [55, 63], [63, 71]]
    assert all(e["reason"] == "not embedded" for e in det["excluded_pairs"])
    assert det["n_counted"] == 19 - 4
    assert det["mutation_rate"] == 0.0
    assert det["pair_distances"][1] is None
    assert res.normalized == 100.0


def test_everything_excluded_without_cut_is_not_applicable() -> None:
    n = 160
    emb = np.full((n + 2, 2), np.nan)
    emb[7] = [1.0, 0.0]
    res = local_memory(np.full(n, 2.0), np.zeros(n), emb, [], 16.0)
    assert res.status == "not_applicable"


def test_cut_guard_frames_follows_real_fps() -> None:
    assert cut_guard_frames(16.0) == 8
    assert cut_guard_frames(24.0) == 12
    assert cut_guard_frames(25.0) == 13  # half up
    assert cut_guard_frames(30.0) == 15


def test_bit_identical_on_repeat() -> None:
    rng = random.Random(11)
    sx, srad, emb = random_episode(rng, 300, nan_every=13)
    a = local_memory(sx, srad, np.asarray(emb, dtype=np.float32), [77], 24.0).to_json()
    b = local_memory(sx, srad, np.asarray(emb, dtype=np.float32), [77], 24.0).to_json()
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_model_aggregation_matches_reference() -> None:
    details = []
    rng = random.Random(3)
    for k in range(6):
        sx, srad, emb = random_episode(rng, 240)
        cuts = [100] if k in (1, 4) else []
        res = local_memory(sx, srad, np.asarray(emb), cuts, 16.0)
        assert res.status == "official"
        details.append(res.details)
    share = sum(d["hard_cut"] for d in details) / len(details)
    rates = [d["mutation_rate"] for d in details if d["mutation_rate"] is not None]
    expected = 100 * (1 - share) * (1 - sum(rates) / len(rates))
    assert model_value("local_memory", details) == pytest.approx(expected, abs=1e-12)


def test_bad_inputs_raise() -> None:
    with pytest.raises(ValueError, match="fps"):
        local_memory([1.0], [1.0], np.ones((3, 2)), [], 0.0)
    with pytest.raises(ValueError, match="equal length"):
        local_memory([1.0, 2.0], [1.0], np.ones((3, 2)), [], 16.0)
    with pytest.raises(ValueError, match="cuts"):
        local_memory(np.full(100, 2.0), np.zeros(100), np.ones((102, 2)), [1.5], 16.0)  # type: ignore[list-item]


# ------------------------------------------------------------------------------------------
# Departures not covered by the golden data (naive references): a failed cut detector is
# missing, missing samples are skipped, still episodes are frozen
# (docs/methods.md#departures-from-the-reference)
# ------------------------------------------------------------------------------------------


def test_fix7_still_but_noisy_is_frozen_whatever_delta_samples() -> None:
    # Codec noise: tiny magnitudes, yet δ (per episode) is tiny too and samples plenty.
    rng = np.random.default_rng(4)
    mag = np.abs(rng.normal(0.0, 0.005, 320))
    assert motion_indexed_samples(mag, 16.0).size >= 5  # the reference's rule alone: not frozen
    emb = np.ones((322, 4))
    res = local_memory(mag, np.zeros(320), emb, [], 16.0)
    assert (res.status, res.reason) == ("not_applicable", "frozen")
    assert res.details["below_motion_floor"] is True
    # Just above the floor it is scored.
    res = local_memory(np.full(320, 0.03), np.zeros(320), emb, [], 16.0)
    assert res.status == "official" and res.normalized == 100.0


def test_fix6_missing_samples_equal_the_episode_without_them() -> None:
    # A missing sample adds no arc and is never read: the sampled indices are those of the
    # same signal with the sample's magnitude set to 0 and δ taken over the others.
    rng = random.Random(21)
    sx, srad, emb = random_episode(rng, 301)
    holes = [30, 31, 32, 150, 299]
    for i in holes:
        sx[i] = math.nan
    res = local_memory(sx, srad, np.asarray(emb), [], 16.0)
    mags = [math.hypot(a, b) for a, b in zip(sx, srad, strict=True) if math.isfinite(a)]
    delta = float(np.mean(mags)) * 0.5 * 16.0
    want, cum, thr = [], 0.0, delta
    for i, (a, b) in enumerate(zip(sx, srad, strict=True)):
        cum += math.hypot(a, b) if math.isfinite(a) else 0.0
        if cum >= thr:
            want.append(i)
            thr += delta
    assert res.details["sampled_frames"] == want
    assert res.details["n_missing_signals"] == len(holes)


def test_fix3_failed_cut_detector_is_missing_not_no_cut() -> None:
    rng = random.Random(22)
    sx, srad, emb = random_episode(rng, 301)
    ok = local_memory(sx, srad, np.asarray(emb), [], 16.0)
    failed = local_memory(sx, srad, np.asarray(emb), None, 16.0)
    assert ok.status == "official"  # "no cut" is a result ...
    assert (failed.status, failed.normalized) == ("missing", None)  # ... a failure is not

"""Local Memory (SPEC §5, statuses §8) against a naive reference written from the SPEC.

The reference uses plain Python loops over lists and shares no helper with the implementation.
Conventions checked (module docstring of ``memory_local``): frame 0 is always sampled; signal i
adds its magnitude to the cumulative arc of frame i + 1; a missing sample adds nothing; a pair is
excluded when a cut lies within ``[a − G, b + G]``.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from typing import Any

import numpy as np
import pytest

from streameval.metrics.memory_local import (
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
    delta = sum(finite) / len(finite) * 0.5 * fps
    frames = [0]
    cum = 0.0
    k = 1
    for i, m in enumerate(mags):
        if m is not None:
            cum += m
        if cum >= (k - 1e-9) * delta:
            frames.append(i + 1)
            while cum >= (k - 1e-9) * delta:
                k += 1
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
        near = any(a - guard <= c <= b + guard for c in cuts)
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
    sx, srad, _ = random_episode(rng, 300, nan_every=17 if seed % 2 else 0)
    delta, frames = n_samples(sx, srad, fps)
    mag = np.sqrt(np.square(sx) + np.square(srad))
    assert motion_step(mag, fps) == pytest.approx(delta, rel=1e-12)
    assert motion_indexed_samples(mag, fps).tolist() == frames


def test_the_last_multiple_is_reached_despite_rounding() -> None:
    # The total arc is N·mean(mag) = (N / (0.5·fps))·δ: here exactly 25 δ, whatever the rounding.
    rng = np.random.default_rng(0)
    for _ in range(20):
        mag = rng.uniform(0.1, 3.0, 300)
        frames = motion_indexed_samples(mag, 24.0).tolist()
        assert frames[-1] == 300
        assert len(frames) == 26


def test_constant_motion_samples_every_half_second() -> None:
    # Constant magnitude: δ = 0.5 s × fps samples of motion, so one frame every 8 frames at 16.
    mag = np.full(160, 3.0)
    assert motion_indexed_samples(mag, 16.0).tolist() == list(range(0, 161, 8))
    assert motion_indexed_samples(mag, 24.0).tolist() == list(range(0, 161, 12))


def test_a_jump_over_several_multiples_samples_once() -> None:
    mag = np.array([0.0] * 10 + [100.0] + [0.0] * 10 + [1.0] * 20)
    delta = motion_step(mag, 16.0)
    assert delta is not None
    frames = motion_indexed_samples(mag, 16.0).tolist()
    assert frames[:2] == [0, 11]  # the spike passes several multiples: frame 11 once
    assert len(frames) == len(set(frames))


def test_no_motion_only_frame_zero() -> None:
    assert motion_indexed_samples(np.zeros(50), 16.0).tolist() == [0]
    assert motion_indexed_samples(np.full(5, np.nan), 16.0).tolist() == [0]


# ------------------------------------------------------------------------------------------
# Episode scores
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fps", [16.0, 24.0])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("cuts", [[], [40], [5, 130, 131, 250]])
def test_local_memory_matches_reference(fps: float, seed: int, cuts: list[int]) -> None:
    rng = random.Random(100 + seed)
    sx, srad, emb = random_episode(rng, 300, nan_every=23 if seed % 3 == 0 else 0)
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
    # Constant motion at 16 fps: samples at 0, 8, ..., 160. The descriptor changes abruptly
    # at frame 44 (pair 40-48 mutates) and at frame 100 (pair 96-104), and a cut at 100 guards
    # pairs whose widened span [a − 8, b + 8] holds 100: 88-96, 96-104, 104-112.
    n = 160
    mag = np.full(n, 2.0)
    emb = np.zeros((n + 2, 4), dtype=np.float32)
    emb[:, 0] = 1.0
    emb[44:, :] = [0.0, 1.0, 0.0, 0.0]
    emb[100:, :] = [0.0, 0.0, 1.0, 0.0]
    res = local_memory(mag, np.zeros(n), emb, [100], 16.0)
    det = res.details
    assert det["flagged_pairs"] == [[40, 48]]
    assert [e["pair"] for e in det["excluded_pairs"]] == [[88, 96], [96, 104], [104, 112]]
    assert det["n_counted"] == 20 - 3
    assert det["mutation_rate"] == pytest.approx(1 / 17)
    assert det["hard_cut"] is True
    assert res.normalized == 0.0  # a hard cut zeroes the episode

    res_nocut = local_memory(mag, np.zeros(n), emb, [], 16.0)
    assert res_nocut.details["flagged_pairs"] == [[40, 48], [96, 104]]
    assert res_nocut.normalized == pytest.approx(100 * (1 - 2 / 20))


def test_frozen_is_not_applicable() -> None:
    # A short burst of motion then nothing: δ is large relative to the burst -> few samples.
    mag = np.zeros(200)
    mag[:3] = 5.0
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
    emb[[16, 17, 64]] = np.nan  # sampled frames 16 and 64 are not embedded
    res = local_memory(mag, np.zeros(n), emb, [], 16.0)
    det = res.details
    assert res.status == "official"
    skipped = [e["pair"] for e in det["excluded_pairs"]]
    assert skipped == [[8, 16], [16, 24], [56, 64], [64, 72]]
    assert all(e["reason"] == "not embedded" for e in det["excluded_pairs"])
    assert det["n_counted"] == 20 - 4
    assert det["mutation_rate"] == 0.0
    assert det["pair_distances"][1] is None
    assert res.normalized == 100.0


def test_everything_excluded_without_cut_is_not_applicable() -> None:
    n = 160
    emb = np.full((n + 2, 2), np.nan)
    emb[0] = [1.0, 0.0]
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

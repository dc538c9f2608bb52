"""Revisit Memory (SPEC §5, statuses §8): gates, equal-arc pairing and scores.

The naive reference below is written from SPEC §5 and the module docstring of
``memory_revisit`` with plain loops (own segmenting, cumulative arc, rolling mean, nearest-depth
search); it shares no helper with the implementation.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from typing import Any

import numpy as np
import pytest

from streameval.metrics.memory_revisit import (
    find_reversals,
    revisit_memory,
)
from tests.metrics.helpers import model_value

PX_PER_DEG = 640 / 70
OPP = {"W": "S", "S": "W", "A": "D", "D": "A", "L": "R", "R": "L"}
CH = {"W": (1, 1.0), "S": (1, -1.0), "A": (0, 1.0), "D": (0, -1.0), "L": (0, 1.0), "R": (0, -1.0)}

# ------------------------------------------------------------------------------------------
# Naive reference
# ------------------------------------------------------------------------------------------


def n_linspace(lo: float, hi: float, n: int) -> list[float]:
    step = (hi - lo) / (n - 1)
    return [lo + k * step for k in range(n - 1)] + [hi]


def n_match(
    out_frames: list[int],
    o_arc: list[float],
    ret_frames: list[int],
    r_arc: list[float],
    depth: float,
) -> tuple[int, int, float]:
    best_i, err_i = -1, math.inf
    for k in range(len(out_frames) - 1, -1, -1):  # nearest the turn wins ties
        if abs(o_arc[k] - depth) < err_i:
            best_i, err_i = out_frames[k], abs(o_arc[k] - depth)
    best_j, err_j = -1, math.inf
    for k in range(len(ret_frames)):
        if abs(r_arc[k] - depth) < err_j:
            best_j, err_j = ret_frames[k], abs(r_arc[k] - depth)
    return best_i, best_j, max(err_i, err_j)


def n_revisit(
    sx: list[float], srad: list[float], keys: list[str], emb: list[list[float]], fps: float
) -> dict[str, Any]:
    n = len(sx)
    segs = []
    start = 0
    for f in range(1, len(keys) + 1):
        if f == len(keys) or keys[f] != keys[start]:
            segs.append((keys[start], start, f))
            start = f
    valid = [math.isfinite(sx[i]) and math.isfinite(srad[i]) for i in range(n)]
    rate_t = [math.hypot(sx[i], srad[i]) / 2 if valid[i] else 0.0 for i in range(n)]
    rate_r = [abs(sx[i]) / 2 if valid[i] else 0.0 for i in range(n)]
    cum = {"trans": [0.0], "rot": [0.0]}
    for i in range(n):
        cum["trans"].append(cum["trans"][-1] + rate_t[i])
        cum["rot"].append(cum["rot"][-1] + rate_r[i])

    def chan(key: str, i: int) -> float:
        return sx[i] if CH[key][0] == 0 else srad[i]

    out: dict[str, Any] = {"reversals": [], "d": []}
    for (k0, s0, e0), (k1, s1, e1) in itertools.pairwise(segs):
        if k0 == "-" or OPP[k0] != k1:
            continue
        rev: dict[str, Any] = {"t0": s1, "status": None, "pairs": []}
        out["reversals"].append(rev)
        motion = "rot" if k0 in "LR" else "trans"
        oi = [i for i in range(s0, min(e0, n)) if valid[i]]
        ri = [i for i in range(s1, min(e1, n)) if valid[i]]
        if len(oi) < 3 or len(ri) < 3:
            rev["status"] = "not_evaluable"
            continue
        ratios = []
        for key, idx in ((k0, oi), (k1, ri)):
            v = [CH[key][1] * chan(key, i) for i in idx]
            ratios.append(sum(v) / (sum(abs(x) for x in v) + 1e-9))
        if min(ratios) < 0.3:
            rev["status"] = "dir"
            continue
        window = oi + ri
        thr = 0.2 * sum(abs(chan(k1, i)) for i in window) / len(window)
        v = [CH[k1][1] * chan(k1, i) for i in ri]
        onset = None
        for k in range(len(v) - 2):
            if (v[k] + v[k + 1] + v[k + 2]) / 3 >= thr:
                onset = ri[k]
                break
        rev["onset"] = onset
        if onset is None:
            rev["status"] = "no_resp"
            continue
        c = cum[motion]
        t0, end = s1, min(e1, n)
        out_frames = list(range(s0, t0 + 1))
        ret_frames = list(range(onset, end + 1))
        o_arc = [c[t0] - c[i] for i in out_frames]
        r_arc = [c[j] - c[onset] for j in ret_frames]
        gain = min(o_arc[0], r_arc[-1]) / max(o_arc[0], r_arc[-1])
        if gain < 0.5:
            rev["status"] = "gain"
            continue
        if motion == "rot" and o_arc[0] / PX_PER_DEG < 15:
            rev["status"] = "undershoot"
            continue

        legs = (out_frames, o_arc, ret_frames, r_arc)
        top = min(o_arc[0], r_arc[-1])
        lo = None
        for depth in n_linspace(0.0, top, 200):
            i, j, _ = n_match(*legs, depth)
            if j - i >= 2.0 * fps:
                lo = depth
                break
        if lo is None:
            rev["status"] = "no_gap"
            continue
        if motion == "rot":
            lo = max(lo, 5 * PX_PER_DEG)
        tol = 3 * PX_PER_DEG if motion == "rot" else 30.0
        seen = set()
        for depth in n_linspace(lo, top, 10) if lo <= top else []:
            i, j, miss = n_match(*legs, depth)
            if miss > tol or j <= i + 1 or (i, j) in seen:
                continue
            seen.add((i, j))
            if any(not math.isfinite(x) for x in emb[i] + emb[j]):
                continue
            dot = sum(a * b for a, b in zip(emb[i], emb[j], strict=True))
            na = math.sqrt(sum(a * a for a in emb[i]))
            nb = math.sqrt(sum(b * b for b in emb[j]))
            rev["pairs"].append((i, j, 1 - dot / (na * nb)))
        rev["status"] = "paired" if rev["pairs"] else "no_pairs"
        out["d"].extend(p[2] for p in rev["pairs"])
    return out


# ------------------------------------------------------------------------------------------
# Synthetic episodes
# ------------------------------------------------------------------------------------------


def pose_embeddings(pos: np.ndarray, dim: int = 6) -> np.ndarray:
    """A descriptor that depends only on the camera position (a perfectly remembered world)."""
    cols = [np.cos(pos / s) for s in (37.0, 91.0, 13.0)] + [np.sin(pos / s) for s in (53.0, 7.0)]
    e = np.stack([*cols, np.full_like(pos, 0.3)], axis=1)[:, :dim]
    out: np.ndarray = (e / np.linalg.norm(e, axis=1, keepdims=True)).astype(np.float32)
    return out


def out_and_back(
    keys: str,
    fps: float = 16.0,
    seconds: float = 20.0,
    speeds: tuple[float, ...] | None = None,
    delay: int = 0,
) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """Signals for a key sequence: each key moves at ``speeds[k]`` px/frame in its direction
    (stride-2 signal = 2 × that), starting ``delay`` frames after each switch."""
    per = round(seconds * fps)
    frame_keys = [k for k in keys for _ in range(per)]
    t = len(frame_keys)
    n = t - 2
    speeds = speeds or tuple(2.0 for _ in keys)
    sx = np.zeros(n)
    srad = np.zeros(n)
    pos = np.zeros(t)
    for f in range(n):
        seg = f // per
        key = keys[seg]
        moving = f - seg * per >= (delay if seg else 0)
        ch, sign = CH[key]
        value = sign * 2.0 * speeds[seg] if moving else 0.0
        (sx if ch == 0 else srad)[f] = value
    # position along the channel axis: content displacement, one step per frame
    step = np.concatenate([[0.0], np.where(np.abs(sx) > 0, sx, srad) / 2.0])
    pos = np.cumsum(step)
    pos = np.concatenate([pos, np.full(t - pos.size, pos[-1])])
    return sx, srad, frame_keys, pose_embeddings(pos)


# ------------------------------------------------------------------------------------------
# Reversals
# ------------------------------------------------------------------------------------------


def test_find_reversals_only_direct_opposite_switches() -> None:
    keys = list("WWWSSS") + list("---") + list("AADDRRLLWW")
    revs = find_reversals(keys, len(keys), 16.0)
    assert [(r.out.key, r.ret.key, r.t0, r.motion) for r in revs] == [
        ("W", "S", 3, "trans"),
        ("A", "D", 11, "trans"),
        ("R", "L", 15, "rot"),
    ]
    assert find_reversals(list("WWW---SSS"), 9, 16.0) == []


def test_no_reversal_is_not_applicable() -> None:
    sx, srad, keys, emb = out_and_back("WA")
    res = revisit_memory(sx, srad, keys, emb, 16.0)
    assert res.status == "not_applicable"
    assert res.reason == "no reversal"
    assert res.details["pair_distances"] == []


# ------------------------------------------------------------------------------------------
# Equal-arc pairing
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fps", [16.0, 24.0])
def test_perfect_symmetric_round_trip_pairs_mirror_frames(fps: float) -> None:
    sx, srad, keys, emb = out_and_back("AD", fps=fps)
    t0 = round(20 * fps)
    res = revisit_memory(sx, srad, keys, emb, fps)
    assert res.status == "official"
    rev = res.details["reversals"][0]
    assert rev["onset_frame"] == t0
    assert rev["coverage"] == 1.0 and rev["partial"] is False
    pairs = [(p["i"], p["j"]) for p in rev["pairs"]]
    assert len(pairs) == 10
    for i, j in pairs:
        assert t0 - i == j - t0  # mirror frames around the switch
        assert j - i >= 2 * fps
    # the same place looks the same: d = 0, score 100
    assert max(p["d"] for p in rev["pairs"]) < 1e-6
    assert res.normalized == pytest.approx(100.0, abs=1e-4)
    json.dumps(res.to_json(), allow_nan=False)


def test_rotation_round_trip_uses_degree_tolerance_and_floor() -> None:
    sx, srad, keys, emb = out_and_back("LR", speeds=(2.0, 2.0))
    res = revisit_memory(sx, srad, keys, emb, 16.0)
    rev = res.details["reversals"][0]
    assert res.status == "official" and rev["motion"] == "rot"
    assert rev["gates"]["undershoot"]["passed"] is True
    assert rev["gates"]["undershoot"]["value"] == pytest.approx(320 * 2.0 / PX_PER_DEG)
    assert rev["tolerance_px"] == pytest.approx(3 * PX_PER_DEG)
    assert rev["reach_lo_px"] >= 5 * PX_PER_DEG
    assert all(p["j"] - 320 == 320 - p["i"] for p in rev["pairs"])


@pytest.mark.parametrize("seed", range(8))
def test_pairing_matches_reference_on_noisy_episodes(seed: int) -> None:
    rng = random.Random(seed)
    fps = [16.0, 24.0][seed % 2]
    keys = ["AD", "LR", "WSW", "ADA", "LRL", "SW", "DA", "RL"][seed]
    speeds = tuple(rng.uniform(1.0, 3.0) for _ in keys)
    sx, srad, frame_keys, emb = out_and_back(
        keys, fps=fps, speeds=speeds, delay=rng.randrange(0, 20)
    )
    noise = np.random.default_rng(seed)
    sx = sx + noise.normal(0, 0.3, sx.size)
    srad = srad + noise.normal(0, 0.2, srad.size)
    sx[noise.integers(0, sx.size, 5)] = np.nan
    emb = emb + noise.normal(0, 0.02, emb.shape).astype(np.float32)
    emb[noise.integers(0, len(emb), 30)] = np.nan
    ref = n_revisit(sx.tolist(), srad.tolist(), frame_keys, emb.tolist(), fps)
    res = revisit_memory(sx, srad, frame_keys, emb, fps)
    revs = res.details["reversals"]
    assert len(revs) == len(ref["reversals"]) >= 1
    for got, want in zip(revs, ref["reversals"], strict=True):
        assert got["t0_frame"] == want["t0"]
        if want["status"] in ("paired", "no_pairs"):
            assert got["onset_frame"] == want["onset"]
            pairs = [(p["i"], p["j"]) for p in got["pairs"]]
            assert pairs == [(i, j) for i, j, _ in want["pairs"]]
            for p, (_, _, d) in zip(got["pairs"], want["pairs"], strict=True):
                assert p["d"] == pytest.approx(d, abs=1e-6)
        elif want["status"] in ("not_evaluable", "no_gap"):
            assert (
                got["status"]
                == {"not_evaluable": "not_evaluable", "no_gap": "no_pairs"}[want["status"]]
            )
        else:
            assert got["status"] == "gate_failed"
            assert got["reason"].startswith(f"{want['status']} gate failed")
    if ref["d"]:
        assert res.status == "official"
        mean_d = sum(ref["d"]) / len(ref["d"])
        assert res.raw == pytest.approx(mean_d, abs=1e-6)
        assert res.normalized == pytest.approx(100 / (1 + mean_d), abs=1e-4)
    else:
        assert res.status == "not_applicable"


def test_changed_world_scores_lower() -> None:
    sx, srad, keys, emb = out_and_back("AD")
    rng = np.random.default_rng(5)
    forgetful = emb.copy()
    forgetful[330:] = rng.normal(0, 1, forgetful[330:].shape)  # the world is new on the return
    good = revisit_memory(sx, srad, keys, emb, 16.0)
    bad = revisit_memory(sx, srad, keys, forgetful, 16.0)
    assert good.normalized is not None and bad.normalized is not None
    assert bad.normalized < good.normalized - 20


# ------------------------------------------------------------------------------------------
# Gates, each failing on purpose
# ------------------------------------------------------------------------------------------


def test_dir_gate_fails_when_the_return_goes_the_wrong_way() -> None:
    sx, srad, keys, emb = out_and_back("AD")
    sx[320:] = 4.0  # D should be −Sx; content keeps moving +x
    res = revisit_memory(sx, srad, keys, emb, 16.0)
    rev = res.details["reversals"][0]
    assert res.status == "not_applicable"
    assert rev["gates"]["dir"]["passed"] is False
    assert rev["gates"]["dir"]["ret"] == pytest.approx(-1.0, abs=1e-6)
    assert rev["gates"]["gain"]["passed"] is None  # later gates are not evaluated
    assert res.reason == "reversal at frame 320 (A→D): dir gate failed (-1.00 < 0.3)"


def test_no_resp_gate_fails_on_a_feeble_return() -> None:
    # Right direction (dir passes), but 0.5 px/sample against a window mean |Sx| of ≈ 5.3.
    sx, srad, keys, emb = out_and_back("AD", speeds=(5.0, 0.25))
    res = revisit_memory(sx, srad, keys, emb, 16.0)
    rev = res.details["reversals"][0]
    assert rev["gates"]["dir"]["passed"] is True
    assert rev["gates"]["no_resp"]["passed"] is False
    assert rev["gates"]["no_resp"]["value"] == pytest.approx(0.5)
    assert res.reason is not None and "no_resp gate failed" in res.reason
    assert res.status == "not_applicable"


def test_gain_gate_fails_on_a_short_return() -> None:
    sx, srad, keys, emb = out_and_back("AD", speeds=(2.0, 0.75))
    res = revisit_memory(sx, srad, keys, emb, 16.0)
    rev = res.details["reversals"][0]
    assert rev["gates"]["no_resp"]["passed"] is True
    gain = rev["gates"]["gain"]["value"]
    assert gain == pytest.approx(0.75 * 318 / (2.0 * 320))
    assert rev["gates"]["gain"]["passed"] is False
    assert res.reason == f"reversal at frame 320 (A→D): gain gate failed ({gain:.2f} < 0.5)"


def test_undershoot_gate_fails_on_a_small_turn() -> None:
    # 0.25 px/frame for 20 s: 80 px of yaw = 8.75° < 15°.
    sx, srad, keys, emb = out_and_back("LR", speeds=(0.25, 0.25))
    res = revisit_memory(sx, srad, keys, emb, 16.0)
    rev = res.details["reversals"][0]
    assert rev["gates"]["gain"]["passed"] is True
    assert rev["gates"]["undershoot"]["passed"] is False
    assert rev["gates"]["undershoot"]["value"] == pytest.approx(8.75)
    assert res.reason == "reversal at frame 320 (L→R): undershoot gate failed (8.8° < 15°)"


def test_translation_has_no_undershoot_gate() -> None:
    sx, srad, keys, emb = out_and_back("AD", speeds=(0.25, 0.25))
    res = revisit_memory(sx, srad, keys, emb, 16.0)
    assert "undershoot" not in res.details["reversals"][0]["gates"]
    assert res.status == "official"


def test_every_reversal_reason_is_reported() -> None:
    sx, srad, keys, emb = out_and_back("ADA", speeds=(2.0, 0.75, 2.0))
    res = revisit_memory(sx, srad, keys, emb, 16.0)
    assert res.status == "not_applicable"
    assert res.reason is not None
    parts = res.reason.split("; ")
    assert len(parts) == 2
    assert parts[0].startswith("reversal at frame 320 (A→D): gain gate failed")
    assert parts[1].startswith("reversal at frame 640 (D→A): gain gate failed")


# ------------------------------------------------------------------------------------------
# Coverage, embeddings, statuses
# ------------------------------------------------------------------------------------------


def test_a_jumpy_return_is_partial() -> None:
    # The return is still, then one huge step covers the whole arc at once: only the depths at
    # the two ends can be matched within 30 px.
    sx, srad, keys, emb = out_and_back("AD")
    sx[320:] = 0.0
    sx[400] = -2 * 640.0
    res = revisit_memory(sx, srad, keys, emb, 16.0)
    rev = res.details["reversals"][0]
    assert rev["gates"]["gain"]["passed"] is True
    assert rev["coverage"] < 0.3 and rev["partial"] is True
    assert res.status == "official"  # a partial reversal still counts (flag only)
    assert {d["reason"] for d in rev["dropped"]} == {"missed tolerance"}


def test_nan_embedding_rows_drop_their_pairs() -> None:
    sx, srad, keys, emb = out_and_back("AD")
    full = revisit_memory(sx, srad, keys, emb, 16.0).details["reversals"][0]["pairs"]
    holes = emb.copy()
    holes[[full[0]["i"], full[3]["j"]]] = np.nan
    res = revisit_memory(sx, srad, keys, holes, 16.0)
    rev = res.details["reversals"][0]
    assert len(rev["pairs"]) == 8
    assert rev["coverage"] == 0.8
    assert [d["reason"] for d in rev["dropped"]] == ["not embedded", "not embedded"]
    assert res.status == "official"


def test_embeddings_none_is_missing() -> None:
    sx, srad, keys, _ = out_and_back("AD")
    res = revisit_memory(sx, srad, keys, None, 16.0)
    assert res.status == "missing"
    # ...but with every gate failing there is nothing to measure: not_applicable
    sx2, srad2, keys2, _ = out_and_back("AD", speeds=(2.0, 0.5))
    assert revisit_memory(sx2, srad2, keys2, None, 16.0).status == "not_applicable"


def test_short_legs_are_not_evaluable() -> None:
    keys = ["A"] * 2 + ["D"] * 40
    sx = np.array([2.0] * 2 + [-2.0] * 38)
    res = revisit_memory(sx, np.zeros(40), keys, np.ones((42, 3)), 16.0)
    assert res.status == "not_applicable"
    assert res.reason is not None
    assert "fewer than 3 signal samples in the outbound leg" in res.reason


def test_bit_identical_on_repeat_and_json_ready() -> None:
    sx, srad, keys, emb = out_and_back("WSW", speeds=(2.0, 1.7, 2.2), delay=9)
    a = revisit_memory(sx, srad, keys, emb, 16.0).to_json()
    b = revisit_memory(sx.copy(), srad.copy(), list(keys), emb.copy(), 16.0).to_json()
    assert json.dumps(a, sort_keys=True, allow_nan=False) == json.dumps(b, sort_keys=True)


def test_model_pools_every_pair() -> None:
    details = []
    rng = np.random.default_rng(2)
    for keys in ("AD", "LR", "WSW"):
        sx, srad, frame_keys, emb = out_and_back(keys)
        emb = emb + rng.normal(0, 0.1, emb.shape).astype(np.float32)
        res = revisit_memory(sx, srad, frame_keys, emb, 16.0)
        assert res.status == "official"
        details.append(res.details)
    pooled = [d for det in details for d in det["pair_distances"]]
    expected = 100 / (1 + sum(pooled) / len(pooled))
    assert model_value("revisit_memory", details) == pytest.approx(expected)
    split = details[2]["pair_distances_trans"] + details[1]["pair_distances_rot"]
    assert len(split) == len(details[2]["pair_distances"]) + len(details[1]["pair_distances"])


def test_legs_too_short_for_a_two_second_gap() -> None:
    # 0.9 s per leg at 16 fps: the widest pair is 2 × 14 = 28 frames apart, below 32.
    sx, srad, keys, emb = out_and_back("AD", seconds=0.9)
    res = revisit_memory(sx, srad, keys, emb, 16.0)
    assert res.status == "not_applicable"
    assert res.reason == "reversal at frame 14 (A→D): no depth with a ≥ 2 s frame gap"
    rev = res.details["reversals"][0]
    assert rev["status"] == "no_pairs" and rev["coverage"] == 0.0 and rev["partial"] is True
    # ...while 1.2 s legs (19 frames; the return's signals stop 2 frames before the end, so its
    # arc is 17 frames) reach 2 × 17 = 34 frames at the full depth
    sx, srad, keys, emb = out_and_back("AD", seconds=1.2)
    res = revisit_memory(sx, srad, keys, emb, 16.0)
    assert res.status == "official"
    rev = res.details["reversals"][0]
    # 10 depths between reach_lo (16 frames of arc) and 17 frames: two distinct pairs
    assert [(p["i"], p["j"]) for p in rev["pairs"]] == [(3, 35), (2, 36)]
    assert rev["coverage"] == 0.2 and rev["partial"] is True
    assert {d["reason"] for d in rev["dropped"]} == {"duplicate"}

"""Control metrics (docs/methods.md#control-metrics, statuses docs/methods.md#statuses): kernels and
episodes against a naive reference.

The reference below is written from docs/methods.md with plain Python loops over lists; it shares no
helper with the implementation (own segmenting, moving average, percentile and hiccup scan).
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import numpy as np
import pytest

from streameval.metrics.control import kernels as control
from streameval.metrics.control.kernels import (
    CONTROL_METRIC_NAMES,
    LatencyScore,
    MotionType,
    control_metrics,
    count_hiccups,
    direction_accuracy_segment,
    direction_purity_segment,
    motion_stability_segment,
    response_latency_switch,
)

# ------------------------------------------------------------------------------------------
# Naive reference (docs/methods.md#control-segments and docs/methods.md#control-metrics read
# literally)
# ------------------------------------------------------------------------------------------

CHANNEL = {
    "W": ("srad", 1),
    "S": ("srad", -1),
    "A": ("sx", 1),
    "D": ("sx", -1),
    "L": ("sx", 1),
    "R": ("sx", -1),
}
FAMILY = {"W": "fwd", "S": "fwd", "A": "lat", "D": "lat", "L": "yaw", "R": "yaw"}


def n_mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def n_percentile(xs: list[float], p: float) -> float:
    s = sorted(xs)
    pos = p / 100 * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def n_median(xs: list[float]) -> float:
    return n_percentile(xs, 50)


def n_smooth(x: list[float], k: int) -> list[float]:
    """Centred zero-padded average; max(len(x), k) values, as numpy's "same" (the reference)."""
    n = len(x)
    full = [sum(x[j] / k for j in range(n) if 0 <= m - j < k) for m in range(n + k - 1)]
    offset = (min(n, k) - 1) // 2
    return full[offset : offset + max(n, k)]


def n_hiccups(vs: list[float], low: float, high: float, min_run: int) -> int:
    """A dip from a value < low up to and *including* the recovering value > high (reference)."""
    count, i = 0, 0
    while i < len(vs):
        if vs[i] < low:
            j = i + 1
            while j < len(vs) and not vs[j] > high:
                j += 1
            length = j - i + 1 if j < len(vs) else j - i  # the recovering sample counts
            if length >= min_run:
                count += 1
            i = j
        else:
            i += 1
    return count


def n_stability(v: list[float], fps: float) -> dict[str, Any]:
    g = n_percentile(v, 70)
    if g <= 1e-6:
        return {"score": 0.0, "g": g, "hiccups": None, "decay": None, "sustain": None}
    k = max(1, int(0.3 * fps))
    vs = n_smooth(v, k)
    sustain = sum(1 for x in vs if x >= 0.4 * g) / len(vs)
    hic = n_hiccups(vs, 0.4 * g, 0.5 * g, k)
    hr = hic / (len(v) / fps)
    n3 = max(1, int(3 * fps))
    first, last = vs[:n3], vs[max(0, len(vs) - n3) :]
    decay = min(max(n_mean(last) / (n_mean(first) + 1e-9), 0.0), 1.2)
    score = sustain * math.exp(-hr / 0.5) * min(1.0, decay / 0.7)
    return {"score": score, "g": g, "hiccups": hic, "decay": decay, "sustain": sustain}


def n_latency(
    v_all: list[float],
    t_all: list[float],
    v_stable: list[float],
    v_ref: float,
    t0: float,
    length: float,
    fps: float,
) -> tuple[float, str | None, float | None]:
    ss = n_median(v_stable) if len(v_stable) > 2 else 0.0
    if ss <= 0.1 * v_ref:
        return 0.0, ("no_response" if ss <= 0 else "weak_response"), None
    vs = n_smooth(v_all, max(1, int(0.5 * fps)))[: len(v_all)]
    latency = length
    for x, t in zip(vs, t_all, strict=True):
        if t0 <= t <= t0 + length and x >= 0.5 * v_ref:
            latency = max(0.0, t - t0)
            break
    return 1 - min(latency, length) / length, None, latency


def n_episode(
    sx: list[float],
    srad: list[float],
    keys: list[str],
    fps: float,
    types: dict[int, MotionType | None],
) -> dict[str, float | None]:
    """Raw value per column (None = not_applicable), from docs/methods.md#control-segments and
    docs/methods.md#control-metrics read literally."""
    runs: list[list[Any]] = []
    for f, k in enumerate(keys):
        if runs and runs[-1][0] == k:
            runs[-1][2] = f + 1
        else:
            runs.append([k, f, f + 1])
    n = len(sx)
    ok = [not (math.isnan(sx[i]) or math.isnan(srad[i])) for i in range(n)]
    segs = []
    for j, (k, start, end) in enumerate(runs):
        full = [i for i in range(start, min(end, n)) if ok[i]]
        stable = []
        for i in full:
            head_ok = j == 0 or i / fps >= start / fps + 3
            tail_ok = j == len(runs) - 1 or i / fps <= end / fps - 1
            if head_ok and tail_ok:
                stable.append(i)
        segs.append((j, k, start, end, full, stable))

    def ch(k: str, i: int) -> float:
        return sx[i] if CHANNEL[k][0] == "sx" else srad[i]

    valid = [i for i in range(n) if ok[i]]
    cols: dict[str, list[float]] = {name: [] for name in CONTROL_METRIC_NAMES}
    for j, k, start, end, full, stable in segs:
        if k == "-":
            continue
        fam = FAMILY[k]
        pool = "rot" if fam == "yaw" else "trans"
        sign = CHANNEL[k][1]
        mt = types.get(j)
        if len(stable) >= 3:
            v = [sign * ch(k, i) for i in stable]
            d = n_mean(v) / (n_mean([abs(ch(k, i)) for i in stable]) + 1e-9)
            w = 1.0 if fam == "fwd" or mt is None else (mt.p_trans if fam == "lat" else mt.p_yaw)
            cols[f"direction_accuracy_{pool}"].append(d * w)
            msx = n_mean([abs(sx[i]) for i in stable])
            msr = n_mean([abs(srad[i]) for i in stable])
            if fam == "fwd" or mt is None:
                lat = yaw = 0.5 * msx
            else:
                lat, yaw = mt.p_trans * msx, (1 - mt.p_trans) * msx
            on = {"fwd": msr, "lat": lat, "yaw": yaw}[fam]
            cols[f"direction_purity_{pool}"].append(on / (lat + yaw + msr + 1e-9))
            cols[f"motion_stability_{pool}"].append(n_stability(v, fps)["score"])
        # docs/methods.md#short-keys-are-not-applicable: no steady state (< 3 stable samples)
        # makes the switch not_applicable (the reference scores it 0)
        if j >= 1 and full and len(stable) >= 3:
            # v_ref from the new key's channel alone, over the whole episode (reference).
            v_ref = n_percentile([abs(ch(k, i)) for i in valid], 75) + 1e-9
            score, _, _ = n_latency(
                [sign * ch(k, i) for i in valid],
                [i / fps for i in valid],
                [sign * ch(k, i) for i in stable],
                v_ref,
                start / fps,
                (end - start) / fps,
                fps,
            )
            if 0 <= score <= 1:
                cols[f"response_latency_{pool}"].append(score)
    return {name: (n_mean(vals) if vals else None) for name, vals in cols.items()}


# ------------------------------------------------------------------------------------------
# Synthetic episodes
# ------------------------------------------------------------------------------------------


def episode(
    plan: list[tuple[str, float, float, int]], fps: float, noise: float = 0.0, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """plan = (key, seconds, response amplitude, delay in samples); signals are T - 2 long."""
    keys: list[str] = []
    sx: list[float] = []
    srad: list[float] = []
    for key, seconds, amp, delay in plan:
        n = round(seconds * fps)
        keys += [key] * n
        for m in range(n):
            a = amp if m >= delay else 0.0
            if key == "-":
                sx.append(0.0)
                srad.append(0.0)
            elif CHANNEL[key][0] == "sx":
                sx.append(CHANNEL[key][1] * a)
                srad.append(0.0)
            else:
                sx.append(0.0)
                srad.append(CHANNEL[key][1] * a)
    rng = np.random.default_rng(seed)
    n_sig = len(keys) - 2
    sx_a = np.array(sx[:n_sig]) + noise * rng.normal(size=n_sig)
    srad_a = np.array(srad[:n_sig]) + noise * rng.normal(size=n_sig)
    return sx_a, srad_a, keys


def assert_json_clean(results: dict[str, Any]) -> None:
    json.dumps({k: r.to_json() for k, r in results.items()}, allow_nan=False)


# ------------------------------------------------------------------------------------------
# Kernels vs the naive reference
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_accuracy_kernel_matches_naive(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ch = rng.normal(0.3, 1.0, size=rng.integers(3, 200))
    sign = rng.choice([-1.0, 1.0])
    w = float(rng.uniform())
    got = direction_accuracy_segment(sign * ch, np.abs(ch), w)
    want = n_mean([sign * c for c in ch.tolist()]) / (n_mean([abs(c) for c in ch]) + 1e-9)
    assert math.isclose(got.direction, want, rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(got.gated, want * w, rel_tol=1e-12, abs_tol=1e-15)
    assert -1.0 <= got.direction <= 1.0


@pytest.mark.parametrize("family", ["fwd", "lat", "yaw"])
@pytest.mark.parametrize("p_trans", [None, 0.0, 0.3, 1.0])
def test_purity_kernel_matches_naive(family: str, p_trans: float | None) -> None:
    sx, sr = 0.7, 0.2
    got = direction_purity_segment(sx, sr, family, p_trans)  # type: ignore[arg-type]
    if family == "fwd" or p_trans is None:
        lat = yaw = sx / 2
    else:
        lat, yaw = p_trans * sx, (1 - p_trans) * sx
    on = {"fwd": sr, "lat": lat, "yaw": yaw}[family]
    assert math.isclose(got.score, on / (lat + yaw + sr + 1e-9), rel_tol=1e-12)
    assert 0.0 <= got.score <= 1.0


@pytest.mark.parametrize("fps", [16.0, 24.5])
@pytest.mark.parametrize("seed", range(25))
def test_stability_kernel_matches_naive(fps: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 400))
    v = 1.0 + 0.3 * rng.normal(size=n)
    # a few random dips so the hysteresis is exercised
    for _ in range(int(rng.integers(0, 4))):
        at, width = int(rng.integers(0, n)), int(rng.integers(1, 15))
        v[at : at + width] = rng.uniform(-0.5, 0.5)
    got = motion_stability_segment(v, fps)
    want = n_stability(v.tolist(), fps)
    assert math.isclose(got.score, want["score"], rel_tol=1e-9, abs_tol=1e-12)
    assert got.hiccups == want["hiccups"]
    assert math.isclose(got.g, want["g"], rel_tol=1e-12)
    assert got.decay is not None and math.isclose(got.decay, want["decay"], rel_tol=1e-9)


@pytest.mark.parametrize("seed", range(30))
def test_hiccup_state_machine_matches_scan(seed: int) -> None:
    rng = np.random.default_rng(seed)
    vs = rng.uniform(0, 1, size=int(rng.integers(0, 300)))
    for min_run in (1, 2, 4, 7):
        assert count_hiccups(vs, 0.4, 0.5, min_run) == n_hiccups(vs.tolist(), 0.4, 0.5, min_run)


@pytest.mark.parametrize("fps", [16.0, 24.5])
@pytest.mark.parametrize("seed", range(25))
def test_latency_kernel_matches_naive(fps: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 400))
    start = int(rng.integers(0, 1000))
    delay = int(rng.integers(0, n))
    v = np.where(np.arange(n) >= delay, rng.uniform(-0.2, 1.5), 0.0) + 0.1 * rng.normal(size=n)
    t = (start + np.arange(n)) / fps
    stable = v[int(rng.integers(0, n)) :]
    v_ref = float(rng.uniform(0.2, 2.0))
    got = response_latency_switch(v, t, stable, v_ref, start / fps, n / fps, fps)
    score, reason, latency = n_latency(
        v.tolist(), t.tolist(), stable.tolist(), v_ref, start / fps, n / fps, fps
    )
    assert math.isclose(got.score, score, rel_tol=1e-9, abs_tol=1e-12)
    assert got.reason == reason
    if latency is None:
        assert got.latency_s is None
    else:
        assert got.latency_s is not None and math.isclose(got.latency_s, latency, abs_tol=1e-12)


def test_latency_steady_state_needs_three_stable_samples() -> None:
    v = np.ones(20)
    got = response_latency_switch(v, np.arange(20) / 16, v[:2], 1.0, 0.0, 20 / 16, 16)
    assert (got.score, got.reason, got.steady_state) == (0.0, "no_response", 0.0)


def test_kernels_reject_nan_and_empty() -> None:
    with pytest.raises(ValueError, match="NaN"):
        motion_stability_segment([1.0, float("nan"), 1.0], 16)
    with pytest.raises(ValueError, match="non-empty"):
        direction_accuracy_segment([], [], 1.0)
    with pytest.raises(ValueError, match="length_s"):
        response_latency_switch([1.0], [0.0], [1.0], 1.0, 0.0, 0.0, 16)


def test_motion_type_validation() -> None:
    assert MotionType.from_p_trans(0.25).p_yaw == 0.75
    with pytest.raises(ValueError, match="p_trans"):
        MotionType(1.5, -0.5)
    with pytest.raises(ValueError, match="must be 1"):
        MotionType(0.5, 0.6)


# ------------------------------------------------------------------------------------------
# Episodes vs the naive reference
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fps", [16.0, 24.5])
@pytest.mark.parametrize("seed", range(15))
def test_random_episodes_match_naive(fps: float, seed: int) -> None:
    rng = random.Random(seed)
    plan = [
        (rng.choice("WSADLR-"), rng.uniform(0.1, 12.0), rng.uniform(-0.5, 2.0), rng.randint(0, 40))
        for _ in range(rng.randint(1, 6))
    ]
    sx, srad, keys = episode(plan, fps, noise=0.2, seed=seed)
    for i in rng.sample(range(len(sx)), k=min(len(sx), rng.randint(0, 30))):
        (sx if rng.random() < 0.5 else srad)[i] = float("nan")
    types: dict[int, MotionType | None] = {
        j: (None if rng.random() < 0.3 else MotionType.from_p_trans(rng.random(), "sidecar"))
        for j in range(len(plan))
    }
    got = control_metrics(sx, srad, keys, fps, types)
    want = n_episode(sx.tolist(), srad.tolist(), keys, fps, types)
    assert list(got) == list(CONTROL_METRIC_NAMES)
    for name in CONTROL_METRIC_NAMES:
        r, expected = got[name], want[name]
        if expected is None:
            assert r.status == "not_applicable", name
            assert r.raw is None and r.normalized is None and r.reason
        else:
            assert r.status == "official", (name, r.reason)
            assert r.raw is not None and r.normalized is not None
            assert math.isclose(r.raw, expected, rel_tol=1e-9, abs_tol=1e-12), name
            expected_norm = 100 * max(0.0, r.raw) if "accuracy" in name else 100 * r.raw
            assert r.normalized == expected_norm
    assert_json_clean(got)


def test_same_input_is_bit_identical() -> None:
    sx, srad, keys = episode([("W", 20, 1, 5), ("L", 20, 0.8, 9), ("D", 20, 1, 3)], 16, 0.3)
    types = {1: MotionType.from_p_trans(0.2), 2: MotionType.from_p_trans(0.9)}
    a = control_metrics(sx, srad, keys, 16, types)
    b = control_metrics(sx.copy(), srad.copy(), list(keys), 16, dict(types))
    assert a == b


# ------------------------------------------------------------------------------------------
# Known answers and edge cases of docs/methods.md
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fps", [16.0, 24.5])
@pytest.mark.parametrize("delay", [0, 5, 13])
def test_perfect_constant_response(fps: float, delay: int) -> None:
    sx, srad, keys = episode([("W", 20, 1.0, 0), ("D", 20, 1.0, delay)], fps)
    r = control_metrics(sx, srad, keys, fps, {1: MotionType.from_p_trans(1.0)})
    assert r["direction_accuracy_trans"].raw == pytest.approx(1.0, abs=1e-8)
    assert r["direction_purity_trans"].raw == pytest.approx(1.0, abs=1e-8)
    assert r["motion_stability_trans"].raw == 1.0
    lat = r["response_latency_trans"]
    seg = lat.details["segments"][0]
    # A step reaches half the window exactly at the delay; the +1e-9 in v_ref can push the
    # crossing one sample later, hence "within one sample".
    assert delay / fps - 1e-12 <= seg["latency_s"] <= (delay + 1) / fps + 1e-12
    assert lat.raw == pytest.approx(1 - seg["latency_s"] / 20.0, abs=1e-12)
    assert lat.raw == pytest.approx(1 - (delay / fps) / 20.0, abs=1 / fps / 20 + 1e-12)
    for name in ("direction_accuracy_rot", "direction_purity_rot", "motion_stability_rot"):
        assert (r[name].status, r[name].reason) == ("not_applicable", "no yaw segments")
    assert r["response_latency_rot"].reason == "no key switch into a yaw segment"


def test_reversed_response_scores_zero_accuracy() -> None:
    sx, srad, keys = episode([("A", 20, -1.0, 0)], 16)  # content moves the wrong way
    r = control_metrics(sx, srad, keys, 16, {0: MotionType.from_p_trans(1.0)})
    acc = r["direction_accuracy_trans"]
    assert acc.status == "official"
    assert acc.raw == pytest.approx(-1.0, abs=1e-8)
    assert acc.normalized == 0.0
    # g = P70(v) = -1 <= 1e-6: stability is a measured 0, not not_applicable.
    stab = r["motion_stability_trans"]
    assert (stab.status, stab.raw) == ("official", 0.0)
    assert stab.details["segments"][0]["g_below_min"] is True


def test_still_world_stability_is_zero() -> None:
    sx, srad, keys = episode([("R", 10, 0.0, 0)], 16)
    stab = control_metrics(sx, srad, keys, 16)["motion_stability_rot"]
    assert (stab.status, stab.raw, stab.normalized) == ("official", 0.0, 0.0)
    seg = stab.details["segments"][0]
    assert seg["hiccups"] is None and seg["decay"] is None


@pytest.mark.parametrize("fps", [16.0, 24.5])
def test_three_half_second_dips_are_three_hiccups(fps: float) -> None:
    n = round(17 * fps)
    v = np.ones(n)
    for start_s in (4.0, 8.0, 12.0):
        a = round(start_s * fps)
        v[a : a + round(0.5 * fps)] = 0.0
    got = motion_stability_segment(v, fps)
    assert got.hiccups == 3
    assert got.hr == pytest.approx(3 / (n / fps))
    assert got.score == pytest.approx(got.sustain * math.exp(-got.hr / 0.5))  # type: ignore[operator]


def test_short_dip_is_not_a_hiccup() -> None:
    v = np.ones(300)
    v[100:102] = 0.0  # 2 samples < int(0.3 * 16) = 4
    assert motion_stability_segment(v, 16).hiccups == 0


def test_open_dip_at_the_end_counts() -> None:
    v = np.ones(300)
    v[-20:] = 0.0
    assert motion_stability_segment(v, 16).hiccups == 1


def test_linear_decay() -> None:
    fps = 16.0
    sx, srad, keys = episode([("W", 20, 1.0, 0)], fps)
    n = srad.size
    srad = np.linspace(1.0, 0.45, n)
    r = control_metrics(sx, srad, keys, fps)["motion_stability_trans"]
    seg = r.details["segments"][0]
    # continuous ramp: last-3 s mean / first-3 s mean, to within the zero-padded ends
    first = 1.0 - 0.55 * 1.5 / (n / fps)
    last = 0.45 + 0.55 * 1.5 / (n / fps)
    assert seg["decay"] == pytest.approx(last / first, abs=0.01)
    assert seg["hiccups"] == 0
    assert r.raw == pytest.approx(seg["sustain"] * seg["decay"] / 0.7, rel=1e-12)
    assert r.raw is not None and r.raw < 0.8


def test_single_key_episode_has_no_latency() -> None:
    sx, srad, keys = episode([("W", 20, 1.0, 0)], 16)
    r = control_metrics(sx, srad, keys, 16)
    for name in ("response_latency_trans", "response_latency_rot"):
        assert (r[name].status, r[name].reason) == ("not_applicable", "no key switch")
        assert r[name].raw is None and r[name].normalized is None


def test_no_response_and_weak_response() -> None:
    fps = 16.0
    sx, srad, keys = episode([("W", 20, 1.0, 0), ("S", 20, -1.0, 0), ("W", 20, 0.05, 0)], fps)
    lat = control_metrics(sx, srad, keys, fps)["response_latency_trans"]
    assert lat.status == "official"
    segs = lat.details["segments"]
    assert [(s["value"], s["response"]) for s in segs] == [
        (0.0, "no_response"),
        (0.0, "weak_response"),
    ]
    assert segs[0]["steady_state"] < 0 < segs[1]["steady_state"]
    assert lat.raw == 0.0


def test_fewer_than_three_stable_samples() -> None:
    fps = 16.0
    # R lasts 3 s + 4 frames; the last 2 frames have no signal: 2 stable samples remain.
    sx, srad, keys = episode([("W", 20, 1.0, 0), ("R", 3 + 4 / fps, 1.0, 0)], fps)
    r = control_metrics(sx, srad, keys, fps)
    for name in ("direction_accuracy_rot", "direction_purity_rot", "motion_stability_rot"):
        assert r[name].status == "not_applicable"
        assert r[name].reason == (
            "all yaw segments have fewer than 3 stable samples "
            "(keys too short: keys of at least 4.13 s)"
        )
        seg = r[name].details["segments"][0]
        assert (seg["status"], seg["n_samples"]) == ("not_applicable", 2)
        assert "value" not in seg
    # latency: no steady state to reach (2 stable samples) is not_applicable, never a 0
    # (docs/methods.md#short-keys-are-not-applicable; the reference scores it 0, no_response).
    lat = r["response_latency_rot"]
    assert lat.status == "not_applicable"
    seg = lat.details["segments"][0]
    assert (seg["status"], seg["n_stable"]) == ("not_applicable", 2)
    assert seg["reason"] == (
        "2 stable samples, 3 needed for a steady state "
        "(the key is too short: keys of at least 4.13 s at 16 fps)"
    )
    assert seg["shortest_key_s"] == 4.125
    assert lat.reason == (
        "all switches into a yaw segment have fewer than 3 samples "
        "(keys too short: keys of at least 4.13 s)"
    )


def test_switch_without_a_steady_state_is_not_applicable() -> None:
    # The reference scores such a switch 0 (steady state 0: no_response); streameval says the
    # segment is too short to have a steady state, and with how long a key must be.
    sx, srad, keys = episode([("W", 20, 1.0, 0), ("L", 4 / 16, 1.0, 0)], 16)  # 2 signals
    lat = control_metrics(sx, srad, keys, 16)["response_latency_rot"]
    assert (lat.status, lat.raw) == ("not_applicable", None)
    assert "response" not in lat.details["segments"][0]
    assert "keys of at least 4.13 s" in lat.reason


def test_missing_stable_samples_are_not_applicable_without_a_key_length() -> None:
    # A long key whose stable samples were lost (dropped frames) is not too short: its reason
    # counts the missing samples and names no key length.
    fps = 16.0
    sx, srad, keys = episode([("W", 10, 1.0, 0), ("S", 10, -1.0, 0), ("W", 10, 1.0, 0)], fps)
    sx[160 + 48 : 320 - 16 + 1] = np.nan  # the whole stable zone of S (13 s to 19 s)
    lat = control_metrics(sx, srad, keys, fps)["response_latency_trans"]
    first = lat.details["segments"][0]
    assert first["status"] == "not_applicable" and "shortest_key_s" not in first
    assert first["reason"] == "0 stable samples, 3 needed for a steady state (97 missing)"
    assert lat.details["segments"][1]["status"] == "scored"


def test_switch_after_the_last_signal_is_not_applicable() -> None:
    sx, srad, keys = episode([("W", 20, 1.0, 0), ("L", 2 / 16, 1.0, 0)], 16)  # no L signal
    lat = control_metrics(sx, srad, keys, 16)["response_latency_rot"]
    assert lat.status == "not_applicable"
    assert lat.reason == "all switches into a yaw segment have fewer than 3 samples"


def test_nan_samples_are_skipped() -> None:
    fps = 16.0
    sx, srad, keys = episode([("W", 20, 1.0, 0), ("A", 20, 1.0, 0)], fps, noise=0.1)
    sx[400:420] = np.nan
    srad[50:60] = np.nan
    r = control_metrics(sx, srad, keys, fps)
    assert_json_clean(r)
    segs = r["direction_accuracy_trans"].details["segments"]
    assert [s["n_missing"] for s in segs] == [10, 20]
    keep = [i for i in range(368, sx.size) if not np.isnan(sx[i])]
    want_a = n_mean([sx[i] for i in keep]) / (n_mean([abs(sx[i]) for i in keep]) + 1e-9)
    assert segs[1]["dir"] == pytest.approx(want_a, rel=1e-12)
    assert all(r[n].status == "official" for n in CONTROL_METRIC_NAMES if "trans" in n)


def test_missing_motion_type_uses_weight_one_and_even_split() -> None:
    sx, srad, keys = episode([("D", 20, 1.0, 0)], 16)
    srad = srad + 0.25
    r = control_metrics(sx, srad, keys, 16, {0: None})
    seg = r["direction_accuracy_trans"].details["segments"][0]
    assert (seg["type_gate"], seg["weight"]) == ("unavailable", 1.0)
    pur = r["direction_purity_trans"]
    assert pur.details["segments"][0]["split"] == "even"
    assert pur.raw == pytest.approx(0.5 / (1.0 + 0.25), rel=1e-8)


def test_fitted_motion_type_gates_accuracy_and_splits_purity() -> None:
    sx, srad, keys = episode([("A", 20, 1.0, 0), ("L", 20, 1.0, 0)], 16)
    types = {0: MotionType.from_p_trans(0.8, "sidecar"), 1: MotionType.from_p_trans(0.3)}
    r = control_metrics(sx, srad, keys, 16, types)
    acc_t = r["direction_accuracy_trans"]
    assert acc_t.raw == pytest.approx(0.8, abs=1e-8)
    assert acc_t.details["segments"][0]["depth_source"] == "sidecar"
    assert r["direction_accuracy_rot"].raw == pytest.approx(0.7, abs=1e-8)
    assert r["direction_purity_trans"].raw == pytest.approx(0.8, abs=1e-8)
    assert r["direction_purity_rot"].raw == pytest.approx(0.7, abs=1e-8)


def test_no_key_segments_are_never_scored() -> None:
    fps = 16.0
    sx, srad, keys = episode([("-", 2, 0.0, 0), ("W", 20, 1.0, 8)], fps)
    r = control_metrics(sx, srad, keys, fps)
    acc = r["direction_accuracy_trans"]
    assert [s["index"] for s in acc.details["segments"]] == [1]
    assert acc.details["segments"][0]["window_start"] == 32 + 48  # j = 1: head skipped
    # the start of the key after a no-key lead-in is a switch (segment j >= 1)
    assert r["response_latency_trans"].details["segments"][0]["previous_key"] == "-"


def test_out_of_range_latency_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    def bogus(*_: object) -> LatencyScore:
        return LatencyScore(1.5, 0.0, None, 1.0, True)

    monkeypatch.setattr(control, "response_latency_switch", bogus)
    sx, srad, keys = episode([("W", 20, 1.0, 0), ("S", 20, 1.0, 0)], 16)
    lat = control_metrics(sx, srad, keys, 16)["response_latency_trans"]
    assert lat.status == "not_applicable"
    assert lat.details["n_dropped"] == 1
    assert lat.details["segments"][0]["status"] == "dropped"
    assert "outside [0, 1]" in (lat.reason or "")


def test_empty_episode() -> None:
    r = control_metrics([], [], [], 16)
    assert all(res.status == "not_applicable" for res in r.values())
    assert r["direction_accuracy_trans"].reason == "no fwd/lat segments"
    assert r["response_latency_rot"].reason == "no key switch"


def test_provisional_flag_is_recorded() -> None:
    sx, srad, keys = episode([("W", 5, 1.0, 0)], 16)
    assert all(
        res.details["provisional"] is True
        for res in control_metrics(sx, srad, keys, 16, provisional=True).values()
    )
    assert all(
        res.details["provisional"] is False for res in control_metrics(sx, srad, keys, 16).values()
    )


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="equal length"):
        control_metrics([0.0, 1.0], [0.0], ["W", "W"], 16)
    with pytest.raises(ValueError, match="frame keys"):
        control_metrics([0.0, 1.0], [0.0, 1.0], ["W"], 16)
    with pytest.raises(ValueError, match="unknown key"):
        control_metrics([0.0], [0.0], ["X"], 16)
    with pytest.raises(ValueError, match="fps"):
        control_metrics([0.0], [0.0], ["W"], 0)


def test_latency_gate_boundaries() -> None:
    t = np.arange(40) / 16
    at_gate = response_latency_switch(np.full(40, 0.1), t, np.full(20, 0.1), 1.0, 0.0, 2.5, 16)
    assert (at_gate.score, at_gate.reason) == (0.0, "weak_response")  # ss <= 0.1 * v_ref
    zero = response_latency_switch(np.zeros(40), t, np.zeros(20), 1.0, 0.0, 2.5, 16)
    assert (zero.score, zero.reason) == (0.0, "no_response")  # ss <= 0
    never = response_latency_switch(np.full(40, 0.3), t, np.full(20, 0.3), 1.0, 0.0, 2.5, 16)
    assert (never.score, never.latency_s, never.reached, never.reason) == (0.0, 2.5, False, None)

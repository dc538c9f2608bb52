"""Local Memory against the reference's outputs (golden ``local``): δ, sampled indices, pair
distances, the cut guard, per-episode and per-model scores."""

from __future__ import annotations

from typing import Any

import numpy as np

from streameval.core.metric_result import MetricResult
from streameval.leaderboard.columns import aggregator_for
from streameval.metrics.arc import flow_magnitude
from streameval.metrics.memory.local_memory import (
    cut_guard_frames,
    local_memory,
    motion_indexed_samples,
    motion_step,
)
from tests.parity.golden import close, load, packed


def _case(npz: dict[str, np.ndarray], k: int) -> tuple[Any, ...]:
    sx = packed(npz["Sx"], npz["offsets"], k)
    srad = packed(npz["Srad"], npz["offsets"], k)
    feats = packed(npz["feats"], npz["feat_offsets"], k).astype(np.float64)
    cuts = packed(npz["cuts"], npz["cut_offsets"], k).tolist()
    return sx, srad, feats, [int(c) for c in cuts], float(npz["fps"][k])


def _check(case: dict[str, Any], res: MetricResult, sx: Any, srad: Any, fps: float) -> None:
    k = case["case"]
    mag = flow_magnitude(sx, srad)
    delta = motion_step(mag, fps)
    close(delta, case["delta"], f"case {k} delta")
    idx = motion_indexed_samples(mag, fps, delta).tolist()
    assert idx == case["idx"], f"case {k} sampled indices"
    assert cut_guard_frames(fps) == case["cut_guard"]
    if case["frozen"]:
        assert (res.status, res.reason) == ("not_applicable", "frozen"), k
        return
    det = res.details
    assert det["n_pairs"] == case["n_pairs"]
    for got, want in zip(det["pair_distances"], case["pair_dists"], strict=True):
        close(got, want, f"case {k} pair distance")
    kept = [e["pair"] for e in det["excluded_pairs"]]
    pairs = det["pairs"]
    assert [p not in kept for p in pairs] == case["pair_kept_after_guard"], k
    assert det["hard_cut"] == case["hard_cut"]
    close(det["mutation_rate"], case["mut_rate_after_guard"], f"case {k} mutation rate")
    if case["score"] is None:
        # Hard cut and no pair left after the guard: the reference's one-episode C1 is NaN
        # (mean of nothing); ours is the formula's value for any rate, 0, and the episode
        # counts in the model's cut share exactly as the reference counts it.
        assert case["hard_cut"] and res.status == "official" and res.normalized == 0.0, k
    else:
        close(res.normalized, case["score"], f"case {k} score")


def test_every_local_case_and_group() -> None:
    doc, npz = load("local")
    results: list[MetricResult] = []
    assert len(doc["cases"]) == 312
    for k, case in enumerate(doc["cases"]):
        sx, srad, feats, cuts, fps = _case(npz, k)
        res = local_memory(sx, srad, feats, cuts, fps)
        _check(case, res, sx, srad, fps)
        results.append(res)
    for group in doc["groups"]:
        measured = [results[k] for k in group["cases"] if results[k].status == "official"]
        got = aggregator_for("local_memory")(measured, 0).value if measured else None
        close(got, group["score"], f"group {group['group']}")

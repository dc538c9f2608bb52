"""Revisit Memory against the reference's outputs (golden ``revisit``): every gate value, the
pairing scan, the pairs, residuals, distances and C2, per episode and per model, to 1e-9."""

from __future__ import annotations

from typing import Any

import numpy as np
from streameval.protocol.suites import worldmark_keys

from streameval.core.metric_result import MetricResult
from streameval.metrics.memory.revisit_memory import equal_split_reversals, revisit_memory_for
from tests.parity.golden import close, load, packed

IN_SCOPE = {6, 7, 8, 11, 12, 14}
GATE_FIELDS = {
    "dir": ("dir_out", "dir_ret"),
    "no_resp": ("t_resp", "threshold"),
    "gain": ("out_mean_abs", "ret_mean_abs", "ratio"),
    "undershoot": ("out_arc_sum", "gate", "out_deg"),
}


def _check_reversal(k: int, want: dict[str, Any], got: dict[str, Any]) -> None:
    where = f"case {k} reversal {want['b']}"
    assert (got["t0"], got["seg_lo"], got["seg_hi"]) == (
        want["t0"],
        want["seg_lo"],
        want["seg_hi"],
    ), where
    assert list(got["gates"]) == list(want["gates"]), where
    for gate, fields in GATE_FIELDS.items():
        if gate in want["gates"]:
            for f in fields:
                close(got["gates"][gate][f], want["gates"][gate][f], f"{where} {gate}.{f}")
            assert got["gates"][gate]["passed"] == want["gates"][gate]["passed"], where
    assert got["status"] == want["status"], f"{where}: {got['status']} vs {want['status']}"
    if "tot_out" not in want:
        return
    for f in ("tot_out", "tot_ret", "tol", "lo"):
        close(got[f], want[f], f"{where} {f}")
    assert got["partial"] == want["partial"], where
    pairing = want["pairing"]
    assert got["early_exit"] == pairing["early_exit"] or pairing["early_exit"] is not None, where
    for f in ("reach_lo", "reach_hi", "lo_t"):
        if f in pairing and pairing[f] is not None:
            close(got[f], pairing[f], f"{where} {f}")
    if pairing.get("depths"):
        for g, w in zip(got["depths"], pairing["depths"], strict=True):
            close(g[0], w[0], f"{where} depth")
            assert g[1:3] == w[1:3], f"{where} depth frames {g} vs {w}"
    assert got["pairs"] == want["pairs"], where
    for g, w in zip(got["resid"], want["resid"], strict=True):
        close(g, w, f"{where} resid")
    for g, w in zip(got.get("dists", []), want["dists"], strict=True):
        close(g, w, f"{where} dist")


def test_every_revisit_case_and_group() -> None:
    doc, npz = load("revisit")
    results: list[MetricResult | None] = []
    assert len(doc["cases"]) == 338
    for k, case in enumerate(doc["cases"]):
        action = int(npz["action_id"][k])
        if action not in IN_SCOPE:
            assert case["status"] == "na_scope"
            results.append(None)
            continue
        sx = packed(npz["Sx"], npz["offsets"], k)
        srad = packed(npz["Srad"], npz["offsets"], k)
        feats = packed(npz["feats"], npz["feat_offsets"], k).astype(np.float64)
        revs = equal_split_reversals(worldmark_keys(action), sx.size)
        res = revisit_memory_for(sx, srad, revs, feats, float(npz["fps"][k]))
        results.append(res)
        got_revs = res.details["reversals"]
        assert len(got_revs) == len(case.get("reversals", [])) or case["status"] != "official"
        for want, got in zip(case.get("reversals", []), got_revs, strict=False):
            _check_reversal(k, want, got)
        if case["status"] == "official":
            assert res.status == "official", k
            close(res.normalized, case["C2"], f"case {k} C2")
            close(res.raw, case["dbar"], f"case {k} dbar")
            close(res.details["score_std"], case["C2_std"], f"case {k} C2_std")
            assert len(res.details["pair_distances"]) == case["n_pairs"]
            assert res.details["n_reversals_passed"] == case["n_reversals_passed"]
        else:
            assert res.status == "not_applicable", k
    for group in doc["groups"]:
        c2 = [
            r.normalized
            for r in (results[k] for k in group["cases"])
            if r is not None and r.status == "official" and r.normalized is not None
        ]
        close(float(np.mean(c2)) if c2 else None, group["Rev"], f"group {group['group']}")

"""Global Memory against the reference's outputs (golden ``global``): view selection exactly;
every pair's counts and skip reason; e, mean e and the co-visible ratio of the float64 variant
to 1e-9; the float32 per-pair statistics and model scores to float32 precision."""

from __future__ import annotations

import numpy as np

from streameval.metrics.fits.geometry import select_views
from streameval.metrics.memory.global_memory import covisibility_arrays, global_score
from tests.parity.golden import close, load, packed


def test_every_view_selection_row() -> None:
    doc, _ = load("global")
    for row in doc["view_selection"]:
        assert select_views(row["n_frames"], row["fps"]) == row["frames"], row


def test_every_global_case_and_group() -> None:
    doc, npz = load("global")
    e64: list[float | None] = []
    assert len(doc["cases"]) == 110
    for k, case in enumerate(doc["cases"]):
        h, w = (int(x) for x in npz["hw"][k])
        depth = packed(npz["depth"], npz["pix_offsets"], k).reshape(-1, h, w).astype(np.float64)
        conf = packed(npz["conf"], npz["pix_offsets"], k).reshape(-1, h, w).astype(np.float64)
        v0, v1 = int(npz["view_offsets"][k]), int(npz["view_offsets"][k + 1])
        w2c = npz["extr_w2c"][v0:v1].astype(np.float64)
        intr = npz["intr"][v0:v1].astype(np.float64)
        cov = covisibility_arrays(list(depth), list(conf), list(w2c), list(intr))
        where = f"case {k}"
        assert abs(cov.scale - case["scale"]) <= 1e-6 * case["scale"], where
        assert cov.conf_thr is not None and abs(cov.conf_thr - case["conf_thr"]) <= 1e-6, where
        for got, want in zip(cov.pairs, case["pairs"], strict=True):
            for f in ("i", "j", "n_src", "n_inside", "n_cov", "skipped"):
                assert got[f] == want[f], f"{where} pair {want['i']}-{want['j']} {f}"
            if want["skipped"] is None:
                for f in ("err_median", "err_mean"):
                    assert abs(got[f] - want[f]) <= 1e-5 * max(1.0, abs(want[f])), where
        f64 = case["f64"]
        close(cov.e, f64["e"], f"{where} e")
        close(cov.mean_e, f64["mean_e"], f"{where} mean_e")
        close(cov.covis_ratio, f64["covis_ratio"], f"{where} covis_ratio")
        if case["status"] == "official":
            assert cov.e is not None and case["score"] is not None
            close(global_score(cov.e), 100 / (1 + f64["e"] / 0.05), f"{where} score")
            assert abs(global_score(cov.e) - case["score"]) < 1e-4, where
        else:
            assert cov.e is None, where
        e64.append(cov.e)
    for group in doc["groups"]:
        es = [e64[k] for k in group["cases"] if e64[k] is not None]
        got = global_score(float(np.mean(es))) if es else None
        assert (got is None) == (group["Global"] is None)
        if got is not None:
            assert abs(got - group["Global"]) < 1e-4, f"group {group['group']}"

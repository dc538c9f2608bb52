"""Control metrics against the reference's own outputs (golden ``control``), to 1e-9.

Every per-segment value (stable zone, M1 direction, M2 purity, M4 stability), every switch
(latency, steady state, v_ref), every per-episode column and every per-model pooled column.
Segments are the reference's equal split of the last sample's time (there is no action log).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from streameval.protocol.suites import worldmark_keys

from streameval.core.metric_result import MetricResult
from streameval.leaderboard.columns import aggregator_for
from streameval.metrics.control.kernels import (
    MotionType,
    control_metrics,
    control_metrics_for_spans,
)
from streameval.metrics.segments import equal_split_spans
from tests.parity.golden import close, load, packed
from tests.parity.short_keys import short_switches, with_short_keys
from tests.parity.still_floor import with_still_floor

COLUMNS = {
    "DA": "direction_accuracy",
    "MP": "direction_purity",
    "MS": "motion_stability",
    "RL": "response_latency",
}
POOL = {"t": "trans", "r": "rot"}


def _score_case(doc: dict[str, Any], npz: Any, k: int) -> tuple[Any, dict[str, MetricResult]]:
    case = doc["cases"][k]
    sx = packed(npz["Sx"], npz["offsets"], k)
    srad = packed(npz["Srad"], npz["offsets"], k)
    fps = float(npz["fps"][k])
    keys = worldmark_keys(int(npz["action_id"][k]))
    assert "".join(keys) == case["keys"]
    spans = equal_split_spans(keys, sx.size, fps)
    types = {
        j: MotionType.from_p_trans(float(p))
        for j, p in enumerate(npz["p_trans"][k][: len(keys)])
        if np.isfinite(p)
    }
    return spans, control_metrics_for_spans(sx, srad, spans, fps, types)


def _by_segment(result: MetricResult) -> dict[int, dict[str, Any]]:
    return {e["index"]: e for e in result.details.get("segments", [])}


def _check_segments(case: dict[str, Any], spans: Any, res: dict[str, MetricResult]) -> None:
    k = case["case"]
    for seg in case["segments"]:
        j = seg["seg"]
        win = seg["window"]
        stable = spans[j].stable
        assert len(stable) == win["n"], f"case {k} seg {j}: zone {stable} vs {win}"
        if win["n"]:
            assert (stable.start, stable.stop - 1) == (win["i_first"], win["i_last"])
        pool = "trans" if seg["family"] in ("fwd", "lat") else "rot"
        acc = _by_segment(res[f"direction_accuracy_{pool}"])[j]
        pur = _by_segment(res[f"direction_purity_{pool}"])[j]
        stab = _by_segment(res[f"motion_stability_{pool}"])[j]
        where = f"case {k} seg {j}"
        if seg["M1"].get("na"):
            assert acc["status"] == pur["status"] == stab["status"] == "not_applicable", where
            continue
        close(acc["dir"], seg["M1"]["dir"], f"{where} dir")
        close(acc["weight"], seg["M1"]["type_w"], f"{where} type_w")
        close(acc["value"], seg["M1"]["dir_gated"], f"{where} dir_gated")
        close(pur["value"], seg["M2"]["purity"], f"{where} purity")
        # docs/methods.md#still-control-segments-score-zero (tests/parity/still_floor.py)
        want_reason = "no_motion" if seg.get("no_motion") else None
        assert acc["reason"] == pur["reason"] == want_reason, where
        for part in ("lat", "yaw", "fwd"):
            ours = {"lat": "lateral", "yaw": "yaw", "fwd": "fwd"}[part]
            close(pur[ours], seg["M2"][part], f"{where} purity {part}")
        m4 = seg["M4"]
        close(stab["value"], m4["score"], f"{where} stability")
        if m4.get("low_g"):
            assert stab["g_below_min"], where
            continue
        close(stab["sustain"], m4["sustain"], f"{where} sustain")
        assert stab["hiccups"] == m4["hiccups"], f"{where} hiccups"
        close(stab["decay"], m4["decay"], f"{where} decay")


def _check_switches(case: dict[str, Any], spans: Any, res: dict[str, MetricResult]) -> None:
    k = case["case"]
    for sw in case["switches"]:
        j = sw["seg"]
        pool = "trans" if spans[j].family in ("fwd", "lat") else "rot"
        e = _by_segment(res[f"response_latency_{pool}"])[j]
        where = f"case {k} switch {j}"
        if sw.get("na"):  # docs/methods.md#short-keys-are-not-applicable
            assert e["status"] == "not_applicable", where
            assert e["n_stable"] <= 2, where
            continue
        close(e["t0_s"], sw["t0"], f"{where} t0")
        close(e["length_s"], sw["L"], f"{where} L")
        close(e["value"], sw["score"], f"{where} score")
        close(e["steady_state"], sw["ss"], f"{where} ss")
        close(e["v_ref"], sw["vref"], f"{where} vref")
        latency = e["latency_s"] if e["latency_s"] is not None else e["length_s"]
        close(latency, sw["latency"], f"{where} latency")


def _column(result: MetricResult) -> float | None:
    return result.normalized if result.status == "official" else None


def test_every_case_segment_switch_and_column() -> None:
    raw, npz = load("control")
    assert len(raw["cases"]) == 420
    doc = with_short_keys(with_still_floor(raw, npz))
    for k, case in enumerate(doc["cases"]):
        spans, res = _score_case(doc, npz, k)
        _check_segments(case, spans, res)
        _check_switches(case, spans, res)
        for col, want in case["columns"].items():
            metric, pool = col.split("_")
            name = f"{COLUMNS[metric]}_{POOL[pool]}"
            close(_column(res[name]), want, f"case {k} {col}")


def test_every_model_pooled_over_segments() -> None:
    raw, npz = load("control")
    doc = with_short_keys(with_still_floor(raw, npz))
    per_case = [_score_case(doc, npz, k)[1] for k in range(len(doc["cases"]))]
    for group in doc["groups"]:
        for col, want in group["columns"].items():
            metric, pool = col.split("_")
            name = f"{COLUMNS[metric]}_{POOL[pool]}"
            measured = [per_case[k][name] for k in group["cases"]]
            measured = [r for r in measured if r.status == "official"]
            got = aggregator_for(name)(measured, 0).value if measured else None
            close(got, want, f"group {group['group']} {col}")


def test_still_floor_pooling_is_the_references() -> None:
    """Without the floor, recomputing the DA/MP columns from the reference's per-segment values
    gives the reference's own columns: only the floor changes the expectation."""
    raw, npz = load("control")
    re = with_still_floor(raw, npz, floor=False)
    for case, want in zip(re["cases"], raw["cases"], strict=True):
        for col in ("DA_t", "DA_r", "MP_t", "MP_r"):
            close(case["columns"][col], want["columns"][col], f"case {case['case']} {col}")
    for group, want in zip(re["groups"], raw["groups"], strict=True):
        for col in ("DA_t", "DA_r", "MP_t", "MP_r"):
            close(group["columns"][col], want["columns"][col], f"group {group['group']} {col}")
    assert (
        sum(
            s.get("no_motion", False)
            for c in with_still_floor(raw, npz)["cases"]
            for s in c["segments"]
        )
        == 33
    )


def test_short_keys_pooling_is_the_references() -> None:
    """Without the departure, recomputing the RL columns from the reference's per-switch scores
    gives the reference's own columns: only the departure changes the expectation."""
    raw, _ = load("control")
    re = with_short_keys(raw, apply=False)
    for case, want in zip(re["cases"], raw["cases"], strict=True):
        for col in ("RL_t", "RL_r"):
            close(case["columns"][col], want["columns"][col], f"case {case['case']} {col}")
    for group, want in zip(re["groups"], raw["groups"], strict=True):
        for col in ("RL_t", "RL_r"):
            close(group["columns"][col], want["columns"][col], f"group {group['group']} {col}")
    assert short_switches(raw) == 14


@pytest.mark.parametrize("fps", [16.0])
def test_issue_repros(fps: float) -> None:
    """Two hand-made cases with the reference's numbers: a 3-frame stall in a W segment (one
    hiccup), and a W→R switch judged against Sx alone (mixed families)."""
    v = np.ones(64)
    v[30:33] = 0
    spans = equal_split_spans(["W"], 64, fps)
    res = control_metrics_for_spans(np.zeros(64), v, spans, fps)
    seg = _by_segment(res["motion_stability_trans"])[0]
    assert seg["hiccups"] == 1
    assert seg["value"] == pytest.approx(0.5876, abs=5e-5)

    # Mixed families: the R switch is judged against Sx alone (v_ref 1.0, not 4.0).
    sx = np.r_[np.full(160, 0.2), np.full(160, -1.0)]
    srad = np.r_[np.full(160, 4.0), np.zeros(160)]
    res = control_metrics(sx, srad, ["W"] * 160 + ["R"] * 160, fps)
    sw = _by_segment(res["response_latency_rot"])[1]
    assert sw["v_ref"] == pytest.approx(1.0)
    assert sw["latency_s"] == pytest.approx(0.0625)
    assert sw["value"] == pytest.approx(0.99375)

"""The report's score table: 0–100 values for table columns, and the raw value in its own
unit for statistics that have no 0–100 form (imaging statistics, drift)."""

from __future__ import annotations

from pathlib import Path

from streameval.report.data import EpisodeData
from streameval.report.episode import _interactivity_rows, _score_rows


def test_raw_statistics_are_shown_in_their_own_unit() -> None:
    scores = {
        "metrics": {
            "direction_accuracy_trans": {"raw": 0.9, "normalized": 90.0, "status": "official"},
            "imaging_noise": {"raw": 0.0031234, "normalized": None, "status": "official"},
            "rollout_aesthetic_drift": {
                "raw": None, "normalized": None, "status": "not_applicable",
                "reason": "no aesthetic backend",
            },
        }
    }  # fmt: skip
    rows = {r[0]: r for r in _score_rows(EpisodeData(Path("."), scores))}
    assert ">90.00<" in rows["direction_accuracy_trans"][2]
    assert ">0.003123<" in rows["imaging_noise"][3] and "—" in rows["imaging_noise"][2]
    assert rows["rollout_aesthetic_drift"][3] == '<span class="num"></span>'
    assert rows["rollout_aesthetic_drift"][4] == "no aesthetic backend"


def test_interactivity_figures_are_labelled_from_the_registry() -> None:
    # an older file: no frames_missing, no key response; extra keys still shown by name
    block = {"delivered_fps": 15.93, "jitter_ms_p95": 4.25, "stalls": 0, "clock": "wall"}
    rows = _interactivity_rows(block)
    labels = [r[0] for r in rows]
    assert labels == ["Delivered fps", "Jitter p95", "Stalls", "clock"]
    assert rows[0][1:] == ['<span class="num">15.9</span>', "fps"]
    assert rows[1][1:] == ['<span class="num">4.2</span>', "ms"]
    assert rows[3][1:] == ["wall", ""]

"""The real-time metrics where people read them: the dashboard's final panel, the episode
report and ``table --diagnostics``, each on [0, 1] with 4 decimals and the raw figure in its
own units (docs/methods.md#real-time-metrics)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from streameval.tui.widgets.final_metrics import evidence, other_metrics_table

from streameval.core.metric_result import MetricResult
from streameval.leaderboard import INCLUDE_ALL, build_table
from streameval.leaderboard.diagnostics import diagnostics
from streameval.report.episode import _realtime_rows
from streameval.results.scores_file import load_results
from tests.cli.test_table_cli import write_episode
from tests.tui.sample import sample_outcome

LATENCY_DETAILS: dict[str, Any] = {
    "unit": "s",
    "latency_seconds": 0.844,
    "latency_frames": 13.504,
    "latency_chunks": 1.5004,
    "missing_response_count": 1,
    "budget_seconds": 1.0,
}


def _metrics() -> dict[str, MetricResult]:
    return {
        "effective_generation_fps": MetricResult.official(
            8.3, 0.51875, {"unit": "fps", "frames": 49, "wall_seconds": 5.78, "target_fps": 16.0}
        ),
        "realtime_factor": MetricResult.not_applicable("in-process run: no generation time"),
        "action_response_latency": MetricResult.official(0.844, 0.156, LATENCY_DETAILS),
        "latency_budget_pass_rate": MetricResult.official(0.5, 0.5, LATENCY_DETAILS),
    }


def test_the_dashboard_panel_shows_four_decimals_and_raw_units() -> None:
    outcome = sample_outcome("ep", 64)
    outcome.scores.metrics.update(_metrics())
    console = Console(width=120, record=True)
    console.print(other_metrics_table(outcome))
    text = console.export_text()
    assert "Effective generation fps" in text and "0.5188" in text
    assert "8.30 fps · 49 frames in 5.78 s" in text
    assert "0.1560" in text and "0.844 s · 13.5 frames · 1.50 chunks · 1 unanswered" in text
    assert "in-process run: no generation time" in text
    rate = _metrics()["latency_budget_pass_rate"]
    assert evidence(rate, "latency_budget_pass_rate").startswith("0.50 passed · 0.844 s")


def test_the_report_has_a_real_time_section() -> None:
    scores = {"metrics": {k: m.to_json() for k, m in _metrics().items()}}
    rows = {r[0]: r for r in _realtime_rows(scores["metrics"])}
    assert ">0.5188<" in rows["Effective generation fps"][2]
    assert rows["Action response latency"][3].startswith("0.844 s · 13.5 frames")
    assert rows["Realtime factor"][2] == '<span class="num"></span>'
    assert rows["Realtime factor"][4] == "in-process run: no generation time"
    assert _realtime_rows({}) == []  # a file from before the real-time metrics


def test_diagnostics_show_the_unit_scale_mean(tmp_path: Path) -> None:
    for i, (raw, value) in enumerate(((0.844, 0.156), (0.2, 0.8))):
        result = MetricResult.official(raw, value, {"unit": "s"}).to_json()
        path = write_episode(tmp_path, "net", f"{i:03d}", {"action_response_latency": result})
        doc = json.loads(path.read_text())
        doc["format"] = "streameval.scores/2"
        path.write_text(json.dumps(doc))
    table = build_table(load_results([tmp_path]).episodes, rule=INCLUDE_ALL)
    cell = dict(diagnostics(table).rows)["net"]["action_response_latency"]
    assert cell.normalized == pytest.approx(0.478) and cell.mean == pytest.approx(0.522)
    assert cell.text() == "0.4780 · 0.522 s"

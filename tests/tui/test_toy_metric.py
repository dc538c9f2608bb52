"""A toy metric registered in one call reaches scores.json (written by the real pipeline), the
dashboard's leaderboard and ``streameval table`` — no column list edited anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streameval.tui import DashboardApp
from textual.widgets import DataTable

from streameval.cli.main import main
from streameval.core.metric_result import MetricResult
from streameval.metrics.registry import MetricSpec, ScoringInput, registered
from tests.tui.tui_fakes import FAST_CONFIG, ShiftingSource, async_test, shifting_job, wait_until

TOY = MetricSpec(
    name="toy_frame_share",
    label="Toy Frame Share",
    short="Toy",
    family="quality",
    kernel="tests.tui.test_toy_metric:toy_scores",
    description="share of the schedule's frames with a key, in percent (test metric)",
)
TOY_DIAGNOSTIC = MetricSpec(
    name="toy_diagnostic",
    label="Toy diagnostic",
    family="worldatlas",
    kernel="tests.tui.test_toy_metric:toy_scores",
    column=False,
)


def toy_scores(inp: ScoringInput) -> dict[str, MetricResult]:
    keys = inp.cache.frame_keys
    share = sum(k != "-" for k in keys) / len(keys)
    return {
        "toy_frame_share": MetricResult.official(share, 100.0 * share, {"frames": len(keys)}),
        "toy_diagnostic": MetricResult.not_applicable("diagnostic only"),
    }


@async_test
async def test_toy_metric_reaches_scores_json_dashboard_and_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with registered(TOY), registered(TOY_DIAGNOSTIC):
        src = ShiftingSource("AD", 16, fps=8.0, episode="ep")
        app = DashboardApp([shifting_job(tmp_path, "ep", src)], FAST_CONFIG)
        async with app.run_test(size=(160, 40)) as pilot:
            await wait_until(pilot, lambda: app.model.finished)
            await pilot.press("t")
            await pilot.press("a")  # one model, one episode: every model in (not the rule)
            board = app.leaderboard
            assert board.table is not None
            assert [c.name for c in board.table.columns][-1] == "toy_frame_share"
            assert "toy_diagnostic" not in [c.name for c in board.table.columns]
            cell = board.table.rows[0].cells["toy_frame_share"]
            assert cell.status == "official" and cell.value == pytest.approx(100.0)
            grid = board.query_one("#leaderboard-table", DataTable)
            headers = [str(c.label) for c in grid.columns.values()]
            assert "Toy" in headers
            await pilot.press("q")

        doc = json.loads((tmp_path / "ep" / "scores.json").read_text())
        assert doc["metrics"]["toy_frame_share"]["normalized"] == pytest.approx(100.0)
        assert doc["metrics"]["toy_frame_share"]["details"] == {"frames": 32}
        assert doc["metrics"]["toy_diagnostic"]["status"] == "not_applicable"
        assert list(doc["metrics"])[-2:] == ["toy_frame_share", "toy_diagnostic"]

        capsys.readouterr()
        assert main(["table", str(tmp_path), "--markdown", "--min-episodes", "0"]) == 0
        header = next(line for line in capsys.readouterr().out.splitlines() if "Model" in line)
        assert header.rstrip(" |").endswith("Toy Frame Share")
        assert (
            main(["table", str(tmp_path), "--sort", "toy_frame_share", "--min-episodes", "0"]) == 0
        )
        assert "Toy = Toy Frame Share" in capsys.readouterr().out
    # unregistered again: the table no longer has the column
    capsys.readouterr()
    main(["table", str(tmp_path), "--markdown", "--min-episodes", "0"])
    assert "Toy" not in capsys.readouterr().out

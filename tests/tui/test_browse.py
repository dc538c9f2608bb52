"""``streameval dashboard RESULTS_DIR`` browses finished results: leaderboard (the table's rule,
``a`` for every model), drill-down, and ``o`` opens an episode's report."""

from __future__ import annotations

from pathlib import Path

import pytest
from streameval.tui.screens.model_episodes import ModelEpisodesScreen
from textual.widgets import Static

from streameval.cli.dashboard import browse_app
from streameval.cli.main import main
from streameval.results.layout import path_component
from tests.tui.sample import LEADERBOARD_MODELS, write_sample_results
from tests.tui.tui_fakes import async_test, content_text, wait_until


@async_test
async def test_browse_results_leaderboard_drill_down_and_report(tmp_path: Path) -> None:
    root = write_sample_results(tmp_path / "results")
    app = browse_app([root])
    opened: list[str] = []
    app.open_url = lambda url, **kwargs: opened.append(url)  # no browser in tests
    async with app.run_test(size=(150, 40)) as pilot:
        board = app.leaderboard
        await wait_until(pilot, lambda: app.screen is board and board.table is not None)
        assert board.table is not None and board.table.rows == ()  # 3 episodes < 10
        # the title counts the rows it sits above (greyed out: excluded), never "0 models"
        title = board.query_one("#leaderboard-title", Static)
        assert "4 models, 12 episodes (4 excluded)" in content_text(title)
        await pilot.press("a")
        assert {r.model for r in board.table.rows} == set(LEADERBOARD_MODELS)
        assert "4 models, 12 episodes" in content_text(title)
        assert "excluded" not in content_text(title)
        await pilot.press("down", "down", "enter")  # by name: hunyuan, matrix, procedural
        assert isinstance(app.screen, ModelEpisodesScreen)
        model = app.screen.model_name
        assert model == "procedural-world[clean]"
        await pilot.press("o")
        await wait_until(pilot, lambda: bool(opened))
        await pilot.press("q")
    assert opened[0].startswith("file://") and opened[0].endswith("/report.html")
    # the display name (procedural-world[clean]) maps back to its shell-safe folder
    report = next((root / path_component(model)).rglob("report.html"))
    assert "<!DOCTYPE html>" in report.read_text()


def test_dashboard_of_a_missing_dir_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dashboard", str(tmp_path / "nope")]) == 2
    assert "nope" in capsys.readouterr().err

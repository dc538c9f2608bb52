"""SVG snapshots of the dashboard at 120×40 with deterministic data (``tests/tui/sample.py``).

The sample data goes through a real ``DashboardObserver`` and the App's message handlers; the
clock is fixed and fps values are part of the data, so nothing depends on wall time.
Update after an intended change with ``pytest tests/tui --snapshot-update`` and look at the
new SVGs (``tests/tui/__snapshots__``) before committing them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytest_textual_snapshot")

from streameval.tui.app import DashboardApp
from textual.pilot import Pilot

from tests.tui.sample import (
    feed_all_done,
    feed_mid_episode,
    sample_app,
    write_sample_results,
)

SIZE = (120, 40)
SnapCompare = Callable[..., bool]


def _feeding(app: DashboardApp, feed: Callable[[DashboardApp], None], *keys: str) -> Any:
    async def run_before(pilot: Pilot[Any]) -> None:
        feed(app)
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await pilot.pause()

    return run_before


def test_live_mid_episode(snap_compare: SnapCompare) -> None:
    app = sample_app()
    assert snap_compare(app, terminal_size=SIZE, run_before=_feeding(app, feed_mid_episode))


def test_live_episode_end(snap_compare: SnapCompare) -> None:
    app = sample_app()
    assert snap_compare(app, terminal_size=SIZE, run_before=_feeding(app, feed_all_done))


def test_leaderboard(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = sample_app(write_sample_results(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=_feeding(app, feed_all_done, "t"))

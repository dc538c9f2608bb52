"""Write SVG screenshots of every dashboard screen (``docs/screenshots/*.svg``) for the README.

    python tools/screenshots.py [--out docs/screenshots]

A development tool, not shipped: the screens show the deterministic sample data of
``tests/tui/sample.py`` (the same states as the SVG
snapshot tests), exported by Textual, so re-running the script gives the same files.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.tui.sample

from streameval.tui.app import DashboardApp

from streameval.cli.dashboard import browse_app
from tests.tui.case_sample import RUN, write_case_run
from tests.tui.sample import feed_all_done, feed_mid_episode, sample_app, write_sample_results

LIVE_SIZE = (120, 40)
TABLE_SIZE = (150, 40)  # 13 master-table columns need more than 120 columns


async def _shoot(
    out: Path,
    root: Path,
    name: str,
    size: tuple[int, int],
    feed: Callable[[DashboardApp], None],
    keys: Sequence[str] = (),
) -> Path:
    app = sample_app(root)
    async with app.run_test(size=size) as pilot:
        feed(app)
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        await pilot.pause()
        path = out / f"{name}.svg"
        path.write_text(app.export_screenshot(title=f"streameval — {name}"), encoding="utf-8")
    return path


async def _shoot_case_run(out: Path, root: Path) -> Path:
    """The case-set view of the sample case run (5 of 7 cases ended), as ``dashboard`` opens it."""
    write_case_run(root, RUN)
    app = browse_app([root])
    async with app.run_test(size=LIVE_SIZE) as pilot:
        await pilot.pause()
        await pilot.pause()
        path = out / "case_run.svg"
        path.write_text(app.export_screenshot(title="streameval — case_run"), encoding="utf-8")
    return path


async def write_screenshots(out: Path) -> list[Path]:
    """Every screen: live mid-episode, live at the end, leaderboard and its drill-downs, the
    case-set view."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = write_sample_results(Path(tmp))
        shots = [
            ("live_running", LIVE_SIZE, feed_mid_episode, ()),
            ("live_final", LIVE_SIZE, feed_all_done, ()),
            # Cursor on a partial cell: the detail line shows its coverage and bounds.
            ("leaderboard", TABLE_SIZE, feed_all_done, ("t", *["down"] * 3, *["right"] * 10)),
            ("leaderboard_model", TABLE_SIZE, feed_all_done, ("t", "down", "enter")),
            (
                "leaderboard_segments",
                TABLE_SIZE,
                feed_all_done,
                ("t", "down", "enter", "enter"),
            ),
        ]
        paths = [
            await _shoot(out, root, name, size, feed, keys) for name, size, feed, keys in shots
        ]
        return [*paths, await _shoot_case_run(out, Path(tmp) / "case-run")]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    args = parser.parse_args(argv)
    for path in asyncio.run(write_screenshots(args.out)):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""WorldMark's published leaderboard as data, and a user's rows beside it
(``leaderboard/published``, ``leaderboard/beside.py``, ``streameval table --published``)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from streameval.cli.main import main
from streameval.errors import BadInputError
from streameval.leaderboard.beside import place
from streameval.leaderboard.columns import column_names
from streameval.leaderboard.published import available, load_board, parse_published
from tests.leaderboard.helpers import control, write_episode

# Matrix-Game 3.0, first-person real, as WorldMark's leaderboard page publishes it
MATRIX_GAME_3_FP_REAL = {
    "direction_accuracy_trans": 98.37,
    "direction_accuracy_rot": 78.30,
    "direction_purity_trans": 84.83,
    "direction_purity_rot": 73.38,
    "motion_stability_trans": 76.39,
    "motion_stability_rot": 96.74,
    "response_latency_trans": 91.83,
    "response_latency_rot": 96.39,
    "local_memory": 91.52,
    "global_memory": 50.60,
    "revisit_memory": 80.38,
    "perceptual_quality": 69.62,
    "aesthetic_quality": 52.86,
}
FP_REAL_TRANS = [78.67, 96.91, 89.07, 92.55, 89.14, 98.16, 95.12, 98.37, 88.74, 51.85]


def test_the_published_worldmark_table_holds_the_published_values() -> None:
    assert "worldmark" in available()
    board = load_board("worldmark")
    sizes = {name: len(split.rows) for name, split in board.splits.items()}
    assert sizes == {
        "first_view/real": 10,
        "first_view/style": 10,
        "third_view/real": 5,
        "third_view/style": 5,
    }
    rows = {row.model: row for row in board.splits["first_view/real"].rows}
    assert dict(rows["Matrix-Game 3.0"].values) == MATRIX_GAME_3_FP_REAL
    trans = [row.values["direction_accuracy_trans"] for row in board.splits["first_view/real"].rows]
    assert trans == FP_REAL_TRANS
    catalog = set(column_names())
    for split in board.splits.values():
        for row in split.rows:
            assert set(row.values) == set(MATRIX_GAME_3_FP_REAL) <= catalog  # our column names
            assert all(0.0 <= v <= 100.0 for v in row.values.values())
    assert board.source["commit"] == "26f33a81d3799373fd80ec391d74bb1ae2291e36"
    assert board.source["date"] and "AlayaLab/WorldMark" in board.source["url"]
    assert board.conditions["mode"] == "offline" and board.conditions["videos_per_model"] == 125
    third = {row.model for row in board.splits["third_view/style"].rows}
    assert third == {"DreamX-World", "HY-World 1.5", "LingBot-World", "Matrix-Game 2.0", "SANA-WM"}


def test_split_names_and_aliases() -> None:
    assert parse_published("worldmark")[1] is None
    assert parse_published("worldmark:first_view/style")[1] == "first_view/style"
    assert parse_published("worldmark:tp-real")[1] == "third_view/real"
    with pytest.raises(BadInputError, match="no split 'nope'; its splits: first_view/real"):
        parse_published("worldmark:nope")
    with pytest.raises(BadInputError, match="no published table 'wbench'; available: worldmark"):
        parse_published("wbench")


def test_rank_ranges_from_an_interval_among_the_published_values() -> None:
    # 97.00 alone: 98.37 and 98.16 above it -> third of eleven
    assert place(97.0, 97.0, FP_REAL_TRANS) == (3, 3, 11)
    # an interval [90, 97] can land under every value at or above 90 (five of them)
    assert place(90.0, 97.0, FP_REAL_TRANS) == (3, 6, 11)
    # a tie goes to the published row; compared as displayed (two decimals)
    assert place(98.37, 98.37, FP_REAL_TRANS) == (1, 2, 11)
    assert place(98.371, 98.374, FP_REAL_TRANS) == (1, 2, 11)
    assert place(0.0, 100.0, FP_REAL_TRANS) == (1, 11, 11)


def _case(path: Path, set_name: str, name: str) -> None:
    doc = json.loads(path.read_text())
    doc["case"] = {"name": name, "set": set_name, "image": name[:3], "action": 1, "keys": "W",
                   "image_sha256": None, "prompt_sha256": None}  # fmt: skip
    path.write_text(json.dumps(doc))


def _results(root: Path) -> None:
    """``mine``: a case run of six cases (four first_view/real, two third_view/style), three of
    the first_view/real ones finished; ``plain``: two episodes of no benchmark case."""
    order = [f"first_view/real/00{i}_001" for i in range(4)]
    order += ["third_view/style/000_001", "third_view/style/001_001"]
    model_dir = root / "mine"
    model_dir.mkdir(parents=True)
    (model_dir / "cases.json").write_text(
        json.dumps({"model": "mine", "order": order, "max_keys": 1, "cases": len(order)})
    )
    for key, value in zip(order[:3], (0.97, 0.96, 0.98), strict=True):
        set_name, name = key.rsplit("/", 1)
        path = write_episode(
            model_dir / set_name, "", name, {"direction_accuracy_trans": control([value])}
        )
        doc = json.loads(path.read_text())
        doc["model"] = "mine"
        path.write_text(json.dumps(doc))
        _case(path, set_name, name)
    for name, value in (("a", 0.5), ("b", 0.7)):
        write_episode(root, "plain", name, {"direction_accuracy_trans": control([value])})


def test_table_published_json_holds_the_published_rows_and_yours_with_rank_ranges(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _results(tmp_path)
    assert (
        main(["table", str(tmp_path), "--include-all", "--published", "worldmark", "--json"]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert "rows" in doc  # the user's own table is still there
    published = doc["published"]
    assert published["source"]["commit"].startswith("26f33a81")
    fp = published["compared"]["first_view/real"]
    assert [row["source"] for row in fp["published"]] == ["published"] * 10
    assert "offline" in fp["published"][0]["conditions"]
    by_model = {row["model"]: row for row in fp["published"]}
    assert by_model["Matrix-Game 3.0"]["values"] == MATRIX_GAME_3_FP_REAL
    yours = {row["model"]: row for row in fp["yours"]}
    mine = yours["mine"]["cells"]["direction_accuracy_trans"]
    assert yours["mine"]["placed"] == "split" and yours["mine"]["episodes"] == 3
    assert mine["value"] == pytest.approx(97.0)
    assert (mine["cases"], mine["of_cases"]) == (3, 4)  # the split's cases, not the run's six
    assert mine["low"] < 97.0 < mine["high"]
    assert (mine["rank_best"], mine["rank_worst"], mine["of"]) == place(
        mine["low"], mine["high"], FP_REAL_TRANS
    )
    assert mine["rank_best"] < mine["rank_worst"]
    assert mine["rank"] == f"#{mine['rank_best']}–{mine['rank_worst']} of 11"
    # no split recorded: shown against every split, its value its own interval
    plain = yours["plain"]["cells"]["direction_accuracy_trans"]
    assert yours["plain"]["placed"] == "unsplit"
    assert (plain["value"], plain["cases"], plain["rank"]) == (60.0, None, "#10 of 11")
    assert yours["plain"]["cells"]["global_memory"] == {"status": "missing", "value": None}
    style = published["compared"]["third_view/style"]
    assert len(style["published"]) == 5
    assert {row["model"] for row in style["yours"]} == {"plain"}  # mine ran none there yet


def test_table_published_split_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _results(tmp_path)
    base = ["table", str(tmp_path), "--include-all", "--published", "worldmark:fp-real"]
    assert main([*base, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc["published"]["compared"]) == ["first_view/real"]
    placed = {
        row["model"]: row["placed"]
        for row in doc["published"]["compared"]["first_view/real"]["yours"]
    }
    assert placed == {"mine": "split", "plain": "asked"}

    assert main([*base, "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["row"] for r in rows] == ["published"] * 10 + ["yours"] * 2
    matrix = next(r for r in rows if r["model"] == "Matrix-Game 3.0")
    assert float(matrix["direction_accuracy_trans"]) == 98.37
    mine = next(r for r in rows if r["model"] == "mine")
    assert (mine["direction_accuracy_trans_cases"], mine["direction_accuracy_trans_of"]) == (
        "3",
        "11",
    )

    assert main([*base, "--markdown"]) == 0
    text = capsys.readouterr().out
    assert "### WorldMark leaderboard · first_view/real (First-Person · Real)" in text
    assert "| Matrix-Game 3.0 | published | 98.37 | 78.30 |" in text
    assert "| **plain** | yours | 60.00 #10 of 11 |" in text
    assert "offline: 125 generated videos" in text

    assert main(base) == 0
    text = capsys.readouterr().out
    assert "Matrix-Game 3.0" in text and "published" in text and "#10 of 11" in text

    html = tmp_path / "t.html"
    assert main([*base, "--html", str(html)]) == 0
    page = html.read_text()
    assert "<td>published</td>" in page and "#10 of 11" in page and "First-Person" in page


def test_published_alone_lists_and_a_bad_split_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["table", "--published"]) == 0
    text = capsys.readouterr().out
    assert "worldmark:first_view/real" in text and "10 models" in text
    assert "worldmark:third_view/style" in text and "5 models" in text
    _results(tmp_path)
    assert main(["table", str(tmp_path), "--published", "worldmark:sideways"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no split 'sideways'" in err[0]
    assert main(["table"]) == 2
    assert "RESULTS_DIR" in capsys.readouterr().err


def test_the_report_index_shows_the_published_split_its_cases_belong_to(tmp_path: Path) -> None:
    from streameval.report.index import render_index

    _results(tmp_path)
    page = render_index(tmp_path)
    assert "WorldMark leaderboard · first_view/real" in page and "Matrix-Game 3.0" in page
    assert "third_view/style (" not in page  # no case of that split in these results
    assert "3/4 cases" in page  # mine: its first_view/real cases so far


def test_the_dashboard_leaderboard_says_where_each_split_lands(tmp_path: Path) -> None:
    import asyncio

    from textual.widgets import Static

    from streameval.cli.dashboard import browse_app
    from tests.tui.tui_fakes import content_text, wait_until

    _results(tmp_path)

    async def scenario() -> str:
        app = browse_app([tmp_path])
        async with app.run_test(size=(200, 50)) as pilot:
            if app.screen is not app.leaderboard:
                await pilot.press("t")
            board = app.leaderboard
            await wait_until(pilot, lambda: app.screen is board and board.table is not None)
            text = content_text(board.query_one("#leaderboard-notes", Static))
            await pilot.press("q")
        return text

    notes = asyncio.run(scenario())
    line = next(x for x in notes.splitlines() if x.startswith("WorldMark leaderboard"))
    assert "first_view/real (published: offline, 125 videos): mine  Acc T #" in line
    assert "of 11" in line

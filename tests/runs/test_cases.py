"""A benchmark's cases, run in process: ``demo --cases`` and ``attach python:... --cases`` over an
``arena_inputs`` folder made here (2 sets × 3 images, 13 cases), what each case's results
record, the first-frame check, bad input, and the replay and rescore of the recordings.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from streameval.protocol.memory_loop import MEMORY_LOOP_SUITE

from streameval.api import evaluate
from streameval.cases import HONOURED_SIMILARITY, case_order, load_cases
from streameval.cases.episode import NOT_HONOURED
from streameval.cases.model import Case
from streameval.cli.main import main
from streameval.engine.config import PipelineConfig
from streameval.errors import BadInputError
from streameval.results.layout import case_dir
from streameval.runs.cases import CaseSelection, case_drive
from streameval.runs.memory_loop import LoopPlan
from streameval.transports.inprocess.driver import ALL_KEYWORDS, reset_keywords
from tests.cases.arena_synth import write_arena
from tests.runs.case_models import picture_world

# one worker runs the module: the demo run below is shared by its tests
pytestmark = pytest.mark.xdist_group("cases-demo")

RUN = ["--no-tui", "--no-report", "--cuts", "scenedetect-content"]
FAST = [*RUN, "--seconds-per-key", "0.5"]
MODEL_DIR = "procedural-world-clean"


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_arena(tmp_path_factory.mktemp("cases") / "arena_inputs")


@pytest.fixture(scope="module")
def demo_run(arena: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``demo --cases`` over every case, recorded (lossless): one run for the tests below."""
    out = tmp_path_factory.mktemp("demo") / "out"
    assert main(["demo", "--cases", str(arena), "--out", str(out), "-q", *FAST]) == 0
    return out


def _scores(root: Path) -> dict[Path, dict[str, Any]]:
    return {p.relative_to(root): json.loads(p.read_text()) for p in root.rglob("scores.json")}


def test_demo_runs_every_case_from_its_image(arena: Path, demo_run: Path) -> None:
    case_set = load_cases(arena)
    model_dir = demo_run / MODEL_DIR
    assert len(_scores(demo_run)) == len(case_set) == 13
    for case in case_set:
        doc = json.loads((model_dir / case.set / case.name / "scores.json").read_text())
        assert doc["episode"] == case.name and doc["complete"] is True
        assert doc["case"] == case.record()
        assert doc["metrics"]["direction_accuracy_trans"]["status"] != "missing"
        # the picture world's first frame is the image (centre crop): honoured, by far
        conditioning = doc["conditioning"]
        assert conditioning["sent"] is True and conditioning["honoured"] is True
        assert conditioning["first_frame_similarity"] >= 0.9
        assert conditioning["frames_compared"] == 4
    record = json.loads((model_dir / "cases.json").read_text())
    assert record["order"] == case_order(case_set.cases, 0)[1]["order"]
    assert (record["seed"], record["kind"], record["cases"]) == (0, "arena_inputs", 13)
    assert record["source"] == str(arena)
    # run in the recorded order (results.jsonl keeps the order episodes ended in)
    ran = [json.loads(line)["results_dir"] for line in (demo_run / "results.jsonl").open()]
    assert ran == [str(model_dir / key) for key in record["order"]]


def test_the_manifest_reports_what_arrived_measured(arena: Path, demo_run: Path) -> None:
    lines = [json.loads(line) for line in (demo_run / MODEL_DIR / "manifest.jsonl").open()]
    assert sorted(line["case"] for line in lines) == sorted(c.key for c in load_cases(arena))
    for line in lines:
        requested, achieved = line["requested"], line["achieved"]
        assert requested["seconds_per_key"] == 0.5 and requested["fps"] == 16
        assert requested["segments"] == len(line["keys"])
        assert achieved["measured"] is True and achieved["frames"] == requested["frames"]
        assert (achieved["width"], achieved["height"]) == (640, 432)
        assert achieved["delivered_fps"] is not None and achieved["delivered_fps"] > 0
        assert [s["keys"] for s in line["segments"]] == list(line["keys"])
        assert line["segments"][-1]["frames"][1] == achieved["frames"]
        assert line["conditioning"]["honoured"] is True


def test_replay_of_the_recordings_is_bit_identical_under_the_same_names(
    demo_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "replayed"
    assert main(["replay", str(demo_run / MODEL_DIR), "--out", str(out), "-q", *RUN]) == 0
    live, replayed = _scores(demo_run), _scores(out)
    assert replayed.keys() == live.keys() and len(live) == 13
    for path, doc in live.items():
        again = replayed[path]
        for field in ("model", "episode", "case", "conditioning", "metrics", "motion_types"):
            assert again[field] == doc[field], (path, field)


def test_rescore_keeps_the_case_and_its_first_frame_check(demo_run: Path, tmp_path: Path) -> None:
    source = next((demo_run / MODEL_DIR / "third_view" / "style").iterdir())
    copy = tmp_path / "copy" / source.name
    shutil.copytree(source, copy)
    assert main(["rescore", str(copy)]) == 0
    before = json.loads((source / "scores.json").read_text())
    after = json.loads((copy / "scores.json").read_text())
    for field in ("case", "conditioning", "metrics"):
        assert after[field] == before[field]


def _attach(model: str, arena: Path, out: Path, *selection: str) -> int:
    url = f"python:tests.runs.case_models:{model}"
    return main(["attach", url, "--cases", str(arena), *selection, "--out", str(out), *FAST])


def test_a_model_that_ignores_the_image_is_warned_and_scored_as_measured(
    arena: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    selection = ["--sets", "first_view/real", "--images", "0", "--actions", "1"]
    assert _attach("ignores_image", arena, tmp_path / "out", *selection) == 0
    shown = capsys.readouterr()
    doc = json.loads(next((tmp_path / "out").rglob("scores.json")).read_text())
    assert doc["case"]["set"] == "first_view/real" and doc["episode"] == "000_001"
    conditioning = doc["conditioning"]
    assert conditioning["sent"] is True and conditioning["honoured"] is False
    assert conditioning["first_frame_similarity"] < HONOURED_SIMILARITY
    assert doc["complete"] is True and doc["metrics"]  # scores stand
    assert f"warning: python:_IgnoresImage: {NOT_HONOURED}" in shown.out + shown.err  # live
    assert f"warning: first_view/real/000_001: {NOT_HONOURED}" in shown.err


def test_a_model_that_starts_from_the_image_in_process_is_honoured(
    arena: Path, tmp_path: Path
) -> None:
    selection = ["--sets", "third_view/style", "--images", "1"]  # one case: 001_003
    assert _attach("picture_world", arena, tmp_path / "out", *selection) == 0
    (path,) = (tmp_path / "out").rglob("scores.json")
    assert path.parent == tmp_path / "out" / "ProceduralWorld" / "third_view" / "style" / "001_003"
    assert json.loads(path.read_text())["conditioning"]["honoured"] is True


def test_a_model_whose_reset_takes_no_image_is_one_line_before_anything_runs(
    arena: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _attach("no_image", arena, tmp_path / "out") == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert "model 'Sliding' has a reset() that takes no image" in lines[0]
    assert "13 cases start from an image" in lines[0]
    assert not list(tmp_path.rglob("scores.json")) and not list(tmp_path.rglob("cases.json"))


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--sets", "first_view/real"], "--sets: selects among cases: give --cases PATH too"),
        (["--images", "0"], "--images: selects among cases"),
        (["--cases", "{arena}/nope"], "missing: expected an arena_inputs folder"),
        (["--cases", "{arena}", "--sets", "side_view"], "--sets names 'side_view'"),
        (["--cases", "{arena}", "--images", "7"], "--images 7 is beyond set first_view/real"),
        (["--cases", "{arena}", "--actions", "4"], "no selected case has action 4"),
    ],
)
def test_bad_case_options_are_one_line_and_exit_2(
    arena: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    expected: str,
) -> None:
    filled = [a.format(arena=arena) for a in arguments]
    assert main(["demo", *filled, "--out", str(tmp_path / "out"), *FAST]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], lines
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_evaluate_takes_cases(arena: Path, tmp_path: Path) -> None:
    selection = CaseSelection(arena, sets="third_view/style", images="1", seed=None)
    result = evaluate(
        picture_world(),
        cases=selection,
        out=tmp_path,
        seconds_per_key=0.5,
        reports=False,
        record="off",
        config=PipelineConfig(cuts="scenedetect-content"),
    )
    (outcome,) = result.outcomes
    assert outcome.complete and outcome.case is not None and outcome.case["name"] == "001_003"
    assert outcome.conditioning is not None and outcome.conditioning["honoured"] is True
    assert outcome.results_dir == tmp_path / "ProceduralWorld" / "third_view" / "style" / "001_003"
    recorded = json.loads((tmp_path / "ProceduralWorld" / "cases.json").read_text())
    assert recorded["selection"] == {"sets": "third_view/style", "images": "1", "actions": None}
    assert recorded["rule"] == "as listed"


# --- the parts ------------------------------------------------------------------------------


def _case(name: str = "000_006", set_name: str = "first_view/real", **fields: Any) -> Case:
    defaults: dict[str, Any] = {
        "suite": "worldmark",
        "image_id": None,
        "action": 6,
        "keys": "WS",
        "image_path": None,
        "prompt": None,
        "intrinsics": None,
    }
    return Case(name=name, set=set_name, **{**defaults, **fields})


def test_case_dir_groups_by_set_and_stays_inside_out(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert case_dir(out, "m[x]", _case()) == out / "m-x" / "first_view" / "real" / "000_006"
    assert case_dir(out, "m", _case("a b", "..")) == out / "m" / "_" / "a_b"
    out.mkdir()
    (out / "m").symlink_to(tmp_path)  # a planted link leads outside --out
    with pytest.raises(BadInputError, match="resolves outside"):
        case_dir(out, "m", _case())


def test_a_memory_loop_case_runs_its_trajectory() -> None:
    named = _case("c", "loops", suite=MEMORY_LOOP_SUITE, action=None, keys=None)
    drive = case_drive(
        _case("c", "loops", suite=MEMORY_LOOP_SUITE, trajectory="dolly_loop"), 0.5, LoopPlan()
    )
    assert drive.trajectory == "dolly_loop" and drive.keys == ("W",) * 4 + ("S",) * 4
    assert drive.schedule(16.0).fps == 24.0 and drive.seconds_per_key == 60 / 8
    custom = case_drive(_case("c", "l", suite=MEMORY_LOOP_SUITE, trajectory=("pan_left",)), 1.0)
    assert custom.trajectory == "custom" and custom.keys == ("L",)
    one = case_drive(named, 1.0, LoopPlan(("yaw_loop_360",), 12.0), fps=10.0)
    assert one.trajectory == "yaw_loop_360" and one.schedule(16.0).total_frames == 120
    with pytest.raises(BadInputError, match="names no trajectory"):
        case_drive(named, 1.0, LoopPlan())


def test_reset_keywords_reads_the_signature() -> None:
    class Model:
        def reset(self, image: Any = None, *, prompt: str = "") -> None: ...

    class Any_:
        def reset(self, **kwargs: Any) -> None: ...

    assert reset_keywords(Model().reset) == {"image", "prompt"}
    assert reset_keywords(Any_().reset) is ALL_KEYWORDS
    assert reset_keywords(None) == frozenset()

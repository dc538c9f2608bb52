"""``streameval export RUN --format worldmark|wbench|raw`` (``results/exports.py``): a case run's
recordings in the layouts the offline benchmarks read, and the round trip — the export replayed
by streameval scores what the run scored."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from streameval.replay.delivery import read_delivery

from streameval.cli.main import main
from streameval.errors import BadInputError
from tests.cases.arena_synth import write_arena

pytestmark = pytest.mark.xdist_group("export-demo")

RUN = ["--no-tui", "--no-report", "--cuts", "scenedetect-content"]
MODEL_DIR = "procedural-world-clean"
TAG = "PROCEDURAL-WORLD-CLEAN"
CONTROL = [
    f"{family}_{axis}"
    for family in ("direction_accuracy", "direction_purity", "motion_stability", "response_latency")
    for axis in ("trans", "rot")
]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``demo --cases`` on image 0 of both sets (first_view/real 000_001, 000_006, 000_009;
    third_view/style 000_001, 000_006: two names in both sets), recorded losslessly."""
    arena = write_arena(tmp_path_factory.mktemp("arena") / "arena_inputs")
    out = tmp_path_factory.mktemp("run") / "out"
    args = ["demo", "--cases", str(arena), "--images", "0", "--out", str(out), "-q"]
    assert main([*args, *RUN, "--seconds-per-key", "0.5"]) == 0
    return out


def _scores(root: Path) -> dict[str, dict[str, Any]]:
    return {
        str(p.parent.relative_to(root).as_posix()).split("/", 1)[1]: json.loads(p.read_text())
        for p in root.rglob("scores.json")
    }


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_worldmark_export_replays_to_the_runs_scores(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "wm"
    assert main(["export", str(run), "--format", "worldmark", "--out", str(out)]) == 0
    videos = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.mp4"))
    assert videos == [
        f"real/first/{TAG}/000_001.mp4",
        f"real/first/{TAG}/000_006.mp4",
        f"real/first/{TAG}/000_009.mp4",
        f"style/third/{TAG}/000_001.mp4",
        f"style/third/{TAG}/000_006.mp4",
    ]
    # the recording's own bytes, listed with their hashes
    manifest = json.loads((out / "export.json").read_text())
    assert manifest["layout"] == "worldmark" and manifest["skipped"] == []
    assert len(manifest["episodes"]) == 5
    for entry in manifest["episodes"]:
        assert entry["reencoded"] is False and entry["codec"] == "h264"
        assert entry["video_quality"] == "lossless"
        assert entry["fps"] == 16.0 and entry["frames"] in (8, 16)
        recording = Path(entry["source"]) / "recording" / "video.mp4"
        video = next(f for f in entry["files"] if f["path"] == entry["delivery"])
        assert video["sha256"] == _sha(recording) == _sha(out / entry["delivery"])
    lines = [json.loads(line) for line in (out / "manifest.jsonl").open()]
    line = next(x for x in lines if x["video"] == f"real/first/{TAG}/000_006.mp4")
    assert (line["view"], line["domain"], line["action_id"], line["keys"]) == (
        "first",
        "real",
        6,
        "WS",
    )
    assert line["segments"] == [{"keys": "W", "frames": [0, 8]}, {"keys": "S", "frames": [8, 16]}]
    assert line["achieved"]["fps"] == 16.0 and line["achieved"]["frames"] == 16

    # the delivery is read on its action log, as the case of its set
    rollout = read_delivery(out / "real" / "first" / TAG / "000_006.mp4")
    assert rollout.meta["case"]["set"] == "first_view/real"
    assert [(s.key, s.start, s.end) for s in rollout.schedule.segments()] == [
        ("W", 0, 8),
        ("S", 8, 16),
    ]

    replayed = tmp_path / "replayed"
    assert (
        main(["replay", str(out / "real"), str(out / "style"), "--out", str(replayed), "-q", *RUN])
        == 0
    )
    live, again = _scores(run), _scores(replayed)
    assert sorted(again) == sorted(live) and len(live) == 5
    for case, doc in live.items():
        for name in CONTROL:
            a, b = doc["metrics"][name], again[case]["metrics"][name]
            assert a["status"] == b["status"], (case, name)
            if a["normalized"] is not None:
                assert b["normalized"] == pytest.approx(a["normalized"], abs=1e-9), (case, name)
        assert again[case]["metrics"] == doc["metrics"], case  # every metric, to the bit
        assert again[case]["model"] == TAG and again[case]["case"]["set"] == doc["case"]["set"]


def test_wbench_export_names_each_case_and_its_turns(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "wb"
    assert main(["export", str(run), "--format", "wbench", "--out", str(out), "--org", "A Lab",
                 "--contact", "eval@example.org"]) == 0  # fmt: skip
    root = out / MODEL_DIR
    names = sorted(p.name for p in (root / "videos").iterdir())
    assert names == [
        "case_000_009_combined.mp4",  # unique: its own name
        "case_first_view_real_000_001_combined.mp4",  # in both sets: the set in front
        "case_first_view_real_000_006_combined.mp4",
        "case_third_view_style_000_001_combined.mp4",
        "case_third_view_style_000_006_combined.mp4",
    ]
    turns = json.loads((root / "turns.json").read_text())
    assert turns["fps"] == 16.0
    assert turns["cases"]["first_view_real_000_006"] == {"turn_frames": [0, 8, 16]}
    assert turns["cases"]["000_009"] == {"turn_frames": [0, 8, 16]}
    assert turns["cases"]["third_view_style_000_001"] == {"turn_frames": [0, 8]}
    meta = json.loads((root / "meta.json").read_text())
    assert meta["type"] == "action" and meta["display_name"] == "procedural-world[clean]"
    assert (meta["org"], meta["contact"]) == ("A Lab", "eval@example.org")
    source = run / MODEL_DIR / "first_view" / "real" / "000_009" / "recording" / "video.mp4"
    assert _sha(root / "videos" / "case_000_009_combined.mp4") == _sha(source)


# `make test-long`: `make test` keeps WorldMark's layout replayed to the run's scores; the
# raw layout is the recordings themselves, replayed the same way
@pytest.mark.long
def test_raw_export_is_the_recordings_and_replays_as_the_run(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "raw"
    assert main(["export", str(run / MODEL_DIR), "--format", "raw", "--out", str(out)]) == 0
    assert (out / "cases.json").read_bytes() == (run / MODEL_DIR / "cases.json").read_bytes()
    recording = Path("first_view/real/000_006/recording")
    for name in ("video.mp4", "actions.jsonl", "keys.jsonl", "meta.json"):
        assert (out / recording / name).read_bytes() == (
            run / MODEL_DIR / recording / name
        ).read_bytes()
    replayed = tmp_path / "replayed"
    assert main(["replay", str(out), "--out", str(replayed), "-q", *RUN]) == 0
    live, again = _scores(run), _scores(replayed)
    assert sorted(again) == sorted(live)
    for case, doc in live.items():
        assert again[case]["metrics"] == doc["metrics"], case


def test_episodes_without_a_recording_are_skipped_one_line_each(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    gone = copy / MODEL_DIR / "third_view" / "style" / "000_006"
    shutil.rmtree(gone / "recording")
    cut = copy / MODEL_DIR / "first_view" / "real" / "000_009" / "recording" / "meta.json"
    meta = json.loads(cut.read_text())
    cut.write_text(json.dumps({**meta, "complete": False, "reason": "interrupted"}))
    out = tmp_path / "wm"
    capsys.readouterr()
    assert main(["export", str(copy), "--format", "worldmark", "--out", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    incomplete = f"real/first/{TAG}/000_009.mp4: the recording is incomplete (interrupted)"
    assert any(line.startswith(f"warning: {incomplete}") for line in err)
    rollout = read_delivery(out / "real" / "first" / TAG / "000_009.mp4")
    assert (rollout.complete, rollout.reason) == (False, "interrupted")
    assert read_delivery(out / "real" / "first" / TAG / "000_006.mp4").complete is True
    skipped = [line for line in err if line.startswith("skipped:")]
    assert skipped == [f"skipped: {gone}: no recording (run with --no-record?), skipped"]
    assert len(list(out.rglob("*.mp4"))) == 4
    assert json.loads((out / "export.json").read_text())["skipped"] == [skipped[0][9:]]
    # nothing to export at all, or no results: exit 2
    assert main(["export", str(tmp_path / "none"), "--format", "raw", "--out", str(out)]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["export", str(empty), "--format", "raw", "--out", str(tmp_path / "e")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {empty}: no scores.json found below it"]
    assert not (tmp_path / "e").exists()


def test_a_delivery_log_that_contradicts_its_action_id_is_refused(
    run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "wm"
    assert main(["export", str(run), "--format", "worldmark", "--out", str(out)]) == 0
    video = out / "real" / "first" / TAG / "000_006.mp4"
    log = video.with_suffix("") / "actions.jsonl"
    log.write_text(log.read_text().replace('"S"', '"D"'))
    with pytest.raises(BadInputError, match="its keys run WD, but action 6 is WS"):
        read_delivery(video)

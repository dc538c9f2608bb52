"""The evidence a run leaves: its ledger, ``verify`` against it (a one-byte change in
any scores.json, cache file or recording of a case run is named; an untouched run passes),
``compare`` of two runs (the configuration differences first), and ``--repeat`` (the
deterministic demo world's rollouts identical; a nondeterministic stand-in's not, with a finite
PSNR)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import streameval
from streameval.cli.main import main
from streameval.engine.config import PipelineConfig
from streameval.engine.verify import verify_run
from streameval.errors import BadInputError
from streameval.results.ledger import LEDGER_FILE, sha256_file
from tests.cases.arena_synth import write_arena

# one worker runs the module: the case run below is shared by its tests
pytestmark = pytest.mark.xdist_group("evidence")

FAST = [
    "--no-tui",
    "--no-report",
    "-q",
    "--cuts",
    "scenedetect-content",
    "--seconds-per-key",
    "0.5",
]
CASE = "procedural-world-clean/third_view/style/001_003"  # image 1 of the set, action 3 (A)
CONFIG = PipelineConfig(cuts="scenedetect-content", embedding=None, imaging=False)


@pytest.fixture(scope="module")
def case_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``demo --cases`` on one case, recorded losslessly, with its reports: the run verified."""
    arena = write_arena(tmp_path_factory.mktemp("cases") / "arena_inputs")
    out = tmp_path_factory.mktemp("run") / "out"
    argv = ["demo", "--cases", str(arena), "--sets", "third_view/style", "--images", "1"]
    argv += ["--actions", "3", "--out", str(out), *[a for a in FAST if a != "--no-report"]]
    assert main(argv) == 0
    return out


@pytest.fixture
def run_copy(case_run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(case_run, copy)
    return copy


def test_the_ledger_binds_inputs_outputs_versions_and_host(case_run: Path) -> None:
    ledger = json.loads((case_run / LEDGER_FILE).read_text())
    assert ledger["episodes"] == [CASE]
    outputs = ledger["outputs"]
    for rel in (f"{CASE}/scores.json", f"{CASE}/cache/episode.json", f"{CASE}/recording/video.mp4",
                f"{CASE}/report.html", "index.html", "results.jsonl"):  # fmt: skip
        assert outputs[rel]["sha256"] == sha256_file(case_run / rel), rel
    inputs = ledger["inputs"]
    assert inputs["command"] == "demo" and inputs["argv"][:2] == ["demo", "--cases"]
    assert inputs["options"]["seconds_per_key"] == 0.5
    image = inputs["files"]["case image third_view/style/001_003"]
    assert image["sha256"] == sha256_file(Path(image["path"]))
    assert set(inputs["suites"]) == {"worldmark"} and inputs["suites"]["worldmark"]["sha256"]
    assert ledger["versions"]["streameval"] == streameval.__version__
    assert "numpy" in ledger["versions"] and ledger["backends"]["flow"] == ["dis-fast"]
    assert ledger["host"]["cores"] >= 1 and ledger["host"]["python"]
    assert ledger["hardware"]["gpu"]["measured"] is False
    assert ledger["hardware"]["gpu"]["reason"].startswith("not measured: no GPU")


def test_verify_passes_an_untouched_run(case_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(case_run)]) == 0
    out = capsys.readouterr().out
    assert "untouched" in out and "1 episode(s) scored again" in out and "differs" not in out


def _flip_one_byte(path: Path, at: float = 0.5) -> None:
    data = bytearray(path.read_bytes())
    data[int(len(data) * at)] ^= 0x01
    path.write_bytes(bytes(data))


def _differences(run: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    assert main(["verify", str(run)]) == 1
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("differs:")]


def test_verify_names_a_changed_byte_in_scores_json(
    run_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = run_copy / CASE / "scores.json"
    doc = json.loads(path.read_text())
    value = doc["metrics"]["direction_accuracy_trans"]["normalized"]
    text = path.read_text()
    digit = f"{value}"[-1]
    # one digit of one score, the JSON still valid: the hash and the rescore both see it
    new = text.replace(
        f'"normalized": {value}', f'"normalized": {f"{value}"[:-1]}{(int(digit) + 1) % 10}', 1
    )
    assert len(new) == len(text) and new != text
    path.write_text(new)
    lines = _differences(run_copy, capsys)
    assert any(f"{CASE}/scores.json: sha256" in line for line in lines)
    assert any(
        f"{CASE}/scores.json: differs from what its cache scores: metrics direction_accuracy_trans"
        in line
        for line in lines
    )


def test_verify_catches_a_forged_ledger_by_scoring_again(
    run_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A scores.json edited and its ledger entry forged to match: the cache still says no."""
    path = run_copy / CASE / "scores.json"
    doc = json.loads(path.read_text())
    doc["metrics"]["direction_accuracy_trans"]["normalized"] = 99.5
    path.write_text(json.dumps(doc, indent=2) + "\n")
    ledger_path = run_copy / LEDGER_FILE
    ledger = json.loads(ledger_path.read_text())
    ledger["outputs"][f"{CASE}/scores.json"] = {
        "sha256": sha256_file(path),
        "bytes": path.stat().st_size,
    }
    ledger_path.write_text(json.dumps(ledger))
    lines = _differences(run_copy, capsys)
    assert lines == [
        f"differs: {CASE}/scores.json: differs from what its cache scores: "
        "metrics direction_accuracy_trans"
    ]


def _case_files(run: Path, folder: str) -> list[str]:
    return sorted(
        p.relative_to(run).as_posix() for p in (run / CASE / folder).rglob("*") if p.is_file()
    )


def test_verify_names_a_changed_byte_in_every_cache_and_recording_file(
    case_run: Path, tmp_path: Path
) -> None:
    files = _case_files(case_run, "cache") + _case_files(case_run, "recording")
    assert f"{CASE}/cache/signals.npz" in files and f"{CASE}/recording/video.mp4" in files
    for rel in files:
        copy = tmp_path / rel.replace("/", "_")
        shutil.copytree(case_run, copy)
        _flip_one_byte(copy / rel)
        found = verify_run(copy)
        assert [d.artifact for d in found.differences if "sha256" in d.problem] == [rel], rel


def test_verify_names_a_swapped_recording(
    case_run: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = run_copy / ".." / "other"
    assert main(["demo", "--actions", "3", "--seed", "1", "--out", str(other), *FAST]) == 0
    video = run_copy / CASE / "recording" / "video.mp4"
    shutil.copyfile(next(other.rglob("video.mp4")), video)
    lines = _differences(run_copy, capsys)
    assert lines == [f"differs: {CASE}/recording/video.mp4: " + lines[0].split(": ", 2)[2]]
    assert "sha256" in lines[0]


def test_verify_names_removed_and_added_files(run_copy: Path) -> None:
    (run_copy / CASE / "report.html").unlink()
    (run_copy / CASE / "notes.txt").write_text("added later\n")
    found = {d.artifact: d.problem for d in verify_run(run_copy).differences}
    assert found == {
        f"{CASE}/report.html": "missing (listed in the ledger)",
        f"{CASE}/notes.txt": "not in the ledger (added after the run)",
    }


def test_verify_refuses_what_is_no_run_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", str(tmp_path)]) == 2
    assert main(["verify", str(tmp_path / "nowhere")]) == 2
    (tmp_path / LEDGER_FILE).write_text("[]")
    assert main(["verify", str(tmp_path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        f"error: {tmp_path}: not a run directory (no ledger.json)",
        f"error: {tmp_path / 'nowhere'}: no such run directory",
        f"error: {tmp_path / LEDGER_FILE}: not a streameval.ledger/1 ledger",
    ]
    with pytest.raises(BadInputError):
        verify_run(tmp_path / "nowhere")


class Slider:
    """A texture sliding with A/D at ``fps``; small frames, so a run takes a second."""

    def __init__(self, fps: float, noise: bool = False) -> None:
        self.fps = fps
        self.canvas = np.random.default_rng(3).integers(0, 256, (48, 320, 3), dtype=np.uint8)
        self.noise = np.random.default_rng() if noise else None  # unseeded: never the same twice
        self.x = 120

    def reset(self) -> None:
        self.x = 120

    def step(self, key: str) -> np.ndarray:
        self.x += {"A": -2, "D": 2}.get(key, 0)
        frame = np.ascontiguousarray(self.canvas[:, self.x : self.x + 64])
        if self.noise is not None:
            jitter = self.noise.integers(-3, 4, frame.shape)
            frame = np.clip(frame.astype(np.int16) + jitter, 0, 255).astype(np.uint8)
        return frame


def _evaluate(out: Path, model: Slider, **options: object) -> streameval.Evaluation:
    return streameval.evaluate(
        model, out=out, model_name="slider", actions=[8], seconds_per_key=1, config=CONFIG,
        reports=False, **options,  # type: ignore[arg-type]
    )  # fmt: skip


def test_compare_lists_the_fps_difference_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert _evaluate(a, Slider(16.0)).complete and _evaluate(b, Slider(8.0)).complete
    inputs = json.loads((a / LEDGER_FILE).read_text())["inputs"]
    assert inputs["command"] == "api" and inputs["options"]["model"].endswith(
        "test_evidence.Slider"
    )
    code = inputs["files"]["model code tests.runs.test_evidence"]  # the model's own code
    assert code["sha256"] == sha256_file(Path(__file__))
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out.splitlines()
    start = out.index("Configuration differences (1):")
    assert out[start + 2].split() == ["fps.announced", "16.0", "8.0"]
    columns = out.index("Columns:")
    assert columns > start + 2
    assert any(line.split()[:3] == ["Direction", "Accuracy", "(trans)"] for line in out[columns:])
    assert main(["compare", str(a), str(b), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["configuration_differences"] == [{"key": "fps.announced", "a": "16.0", "b": "8.0"}]
    assert {r["column"] for r in doc["columns"]} >= {"direction_accuracy_trans", "local_memory"}


def test_repeat_on_the_demo_world_says_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["demo", "--actions", "3", "--repeat", "2", "--out", str(out), *FAST]) == 0
    assert (
        "procedural-world-clean/003_A: 2 rollouts identical (8 frames each)"
        in capsys.readouterr().err
    )
    ledger = json.loads((out / LEDGER_FILE).read_text())
    assert ledger["repeats"]["identical"] is True
    assert json.loads((out / "evidence.json").read_text())["repeats"] == ledger["repeats"]
    assert "evidence.json" in ledger["outputs"]
    assert (out / ".repeats" / "r2" / "procedural-world-clean" / "003_A" / "scores.json").is_file()
    assert main(["table", str(out), "--include-all", "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert [r["episodes"] for r in table["rows"]] == [1]  # a repeat is no second episode
    assert main(["verify", str(out)]) == 0


def test_repeat_of_a_nondeterministic_model_says_how_far_apart(tmp_path: Path) -> None:
    result = _evaluate(tmp_path / "out", Slider(16.0, noise=True), repeat=3)
    block = result.evidence["repeats"]
    assert block["repeat"] == 3 and block["identical"] is False
    (episode,) = block["episodes"]
    assert episode["rollouts"] == 3 and episode["frames"] == [32, 32, 32]
    assert episode["differing_frames"] == 64  # every frame of repeats 2 and 3
    # ±3 uniform noise on both sides: MSE ≈ 2·4 = 8, PSNR ≈ 39 dB
    assert 35 < episode["psnr_db_min"] <= episode["psnr_db_median"] < 45
    assert any("NOT identical" in line for line in result.notes)


def test_repeat_needs_a_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["demo", "--repeat", "2", "--record", "off", "--out", str(tmp_path / "o"), *FAST]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().startswith("error: --repeat: rollouts are compared")
    with pytest.raises(BadInputError, match="repeat"):
        _evaluate(tmp_path / "p", Slider(16.0), repeat=2, record="off")


def test_a_claim_is_judged_and_kept_in_the_ledger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["demo", "--actions", "3", "--claim", "25 fps, 1x H100, 720p", "--out", str(out)]
    assert main([*argv, *(a for a in FAST if a != "--no-report")]) == 0
    err = capsys.readouterr().err
    assert "claim '25 fps, 1x H100, 720p': different configuration" in err
    block = json.loads((out / LEDGER_FILE).read_text())["claim"]
    fields = {f["field"]: f for f in block["fields"]}
    assert fields["resolution"]["measured"] == "640×432"
    assert fields["resolution"]["verdict"] == "different configuration"
    assert fields["gpu"]["verdict"] == "not measured"
    index = (out / "index.html").read_text()  # the report says it too, with the hardware
    assert "<h2>Claim “25 fps, 1x H100, 720p”: different configuration</h2>" in index
    assert "<h2>Hardware</h2>\n<p>GPU: not measured: no GPU" in index
    assert main(["demo", "--claim", "fast", "--out", str(tmp_path / "bad"), *FAST]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --claim: cannot read 'fast': expected parts like '25 fps', '1x H100' and "
        "'720p' or '1280x720'"
    )

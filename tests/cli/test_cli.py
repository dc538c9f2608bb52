"""The command line, end to end: demo, replay (good and bad inputs), rescore, attach."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from streameval.cli.main import main
from streameval.results.layout import episode_dir
from tests.replay.replay_synth import make_rollout_dir, moving_texture, write_video

# one worker runs the module: its module-scoped episodes are made once, not once per worker
pytestmark = pytest.mark.xdist_group("cli-demo")


def _one_line_errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error: ")]


@pytest.fixture(scope="module")
def demo_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4 s AD episode (2 s a key). No report.html: nothing here reads it (tests/report/ does)."""
    out = tmp_path_factory.mktemp("demo")
    argv = ["demo", "--no-tui", "--no-report", "--out", str(out), "--actions", "8"]
    assert main([*argv, "--seconds-per-key", "2"]) == 0
    return out


def test_demo_writes_results_recording_and_log(demo_out: Path) -> None:
    episode = demo_out / "procedural-world-clean" / "008_AD"  # a folder name safe in a shell
    assert episode == episode_dir(demo_out, "procedural-world[clean]", "008_AD")
    doc = json.loads((episode / "scores.json").read_text())
    assert doc["model"] == "procedural-world[clean]" and doc["frames"] == 64  # the display name
    assert doc["metrics"]["direction_accuracy_trans"]["status"] == "official"
    assert doc["metrics"]["direction_accuracy_rot"]["status"] == "not_applicable"
    assert (episode / "recording" / "video.mp4").is_file()
    assert (episode / "recording" / "poses.npy").is_file()
    lines = (demo_out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 1
    line = json.loads(lines[0])
    assert line["episode"] == "008_AD" and line["status"] == "complete"
    assert line["metrics"]["direction_accuracy_rot"]["status"] == "not_applicable"


def test_rescore_reproduces_and_replay_matches(
    demo_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    episode = episode_dir(demo_out, "procedural-world[clean]", "008_AD")
    before = json.loads((episode / "scores.json").read_text())["metrics"]
    assert main(["rescore", str(demo_out)]) == 0
    assert "unchanged" in capsys.readouterr().out
    assert json.loads((episode / "scores.json").read_text())["metrics"] == before
    argv = ["replay", str(episode / "recording"), "--out", str(tmp_path), "--no-tui"]
    assert main([*argv, "--no-report"]) == 0
    replayed = next(tmp_path.rglob("scores.json"))
    assert json.loads(replayed.read_text())["metrics"] == before


def test_bad_inputs_exit_2_name_the_file_and_the_rest_is_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = make_rollout_dir(tmp_path / "good", ["A"] * 24 + ["D"] * 24, size=(64, 48))
    # a truncated video
    trunc_dir = tmp_path / "MODEL"
    trunc = write_video(trunc_dir / "001_003.mp4", moving_texture(40, 48, 64), fps=16)
    trunc.write_bytes(trunc.read_bytes()[: trunc.stat().st_size // 2])
    # a delivery whose name does not parse
    badname = write_video(tmp_path / "OTHER" / "clip.mp4", moving_texture(8, 48, 64))
    # an action log shorter than the video, and an unknown key
    short = make_rollout_dir(tmp_path / "short", ["A"] * 20, size=(64, 48))
    (short / "actions.jsonl").write_text(
        "\n".join(json.dumps({"frame": i, "key": "A"}) for i in range(10)) + "\n"
    )
    unknown = make_rollout_dir(tmp_path / "unknown", ["A"] * 20, size=(64, 48))
    lines = (unknown / "actions.jsonl").read_text().splitlines()
    lines[3] = json.dumps({"frame": 3, "key": "Q"})
    (unknown / "actions.jsonl").write_text("\n".join(lines) + "\n")

    out = tmp_path / "out"
    args = [str(p) for p in (good, trunc, badname, short, unknown)]
    code = main(["replay", *args, "--out", str(out), "--no-tui"])
    errors = _one_line_errors(capsys.readouterr().err)
    assert code == 2
    assert any("001_003.mp4" in e for e in errors)
    assert any("clip.mp4" in e for e in errors)
    assert any("actions.jsonl" in e and "short" in e for e in errors)
    assert any("'Q'" in e and "line 4" in e for e in errors)
    scored = [json.loads(p.read_text()) for p in out.rglob("scores.json")]
    assert len(scored) == 1 and scored[0]["frames"] == 48


def test_rescore_of_a_missing_dir_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rescore", str(tmp_path / "nope")]) == 2
    (err,) = _one_line_errors(capsys.readouterr().err)
    assert "nope" in err


def test_unknown_defect_and_backend_are_bad_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["demo", "--no-tui", "--out", str(tmp_path), "--defect", "frozen"]) == 2
    assert "did you mean 'freeze'" in capsys.readouterr().err
    assert main(["demo", "--no-tui", "--out", str(tmp_path), "--flow", "farneback"]) == 2
    assert "unknown flow backend 'farneback'" in capsys.readouterr().err


class TinyModel:
    """An in-process model for ``attach python:``: a texture sliding left and right."""

    fps = 16.0

    def __init__(self) -> None:
        rng = np.random.default_rng(0)
        self.canvas = rng.integers(0, 256, (60, 400, 3), dtype=np.uint8)
        self.x = 150

    def step(self, key: str) -> np.ndarray:
        self.x += {"A": -3, "D": 3}.get(key, 0)
        return np.ascontiguousarray(self.canvas[:, self.x : self.x + 80])


def test_attach_python_model(tmp_path: Path) -> None:
    url = "python:tests.cli.test_cli:TinyModel"
    code = main(
        [
            "attach",
            url,
            "--out",
            str(tmp_path),
            "--actions",
            "8",
            "--seconds-per-key",
            "3",
            "--no-tui",
            "--no-report",
        ]
    )
    assert code == 0
    doc = json.loads((tmp_path / "TinyModel" / "008_AD" / "scores.json").read_text())
    assert doc["frames"] == 96 and doc["model"] == "TinyModel"


def test_attach_unsupported_scheme(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["attach", "ftp://x", "--out", str(tmp_path), "--no-tui"]) == 2
    assert "unsupported URL scheme" in capsys.readouterr().err

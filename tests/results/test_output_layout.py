"""The results directory (docs/cli.md#results-directory): OUT/<model>/<episode>/, no silent
overwrite, --resume, one line per episode in results.jsonl; attach without PYTHONPATH,
--model-name; --record lossless|lossy|off; exit codes of a user stop."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from streameval.cli.exit_codes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK
from streameval.cli.main import main
from streameval.results.layout import decide, episode_dir, path_component

# One second a key and no report.html/index.html: these tests check folders, names and
# results.jsonl, not scores or reports (the report is tested in tests/report/).
SHORT = ["--actions", "8", "--seconds-per-key", "1", "--no-tui", "--no-report"]
SHORT += ["--cuts", "scenedetect-content"]
# the adapter guide's scores are asserted: the length they were measured at
GUIDE_SHORT = ["--actions", "8", "--seconds-per-key", "2", "--no-tui", "--no-report"]
GUIDE_SHORT += ["--cuts", "scenedetect-content"]


def _demo(out: Path, *extra: str) -> int:
    return main(["demo", "--out", str(out), *SHORT, *extra])


def _lines(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_path_component_keeps_names_inside_one_folder() -> None:
    assert path_component("procedural-world[clean]") == "procedural-world-clean"
    assert path_component("../etc") == "__etc"
    assert path_component("a/b\\c d") == "a_b_c_d"
    assert path_component("") == "_"
    assert episode_dir(Path("OUT"), "m/x", "001_WS") == Path("OUT/m_x/001_WS")


@pytest.mark.parametrize(
    ("name", "folder"),
    [
        ("procedural-world[clean]", "procedural-world-clean"),
        ("world[a][b]", "world-a-b"),
        ("my model*v2?", "my_model_v2_"),
        ("half[open", "half_open"),
        ("[x]", "_-x"),  # never led by "-" (read as an option)
        ("-rf", "_-rf"),
        ("m=1,@v+2", "m=1,@v+2"),
    ],
)
def test_path_component_is_safe_in_a_shell(name: str, folder: str) -> None:
    """A results folder is typed in a shell: ``ls OUT/procedural-world[clean]`` is a glob that
    finds nothing, so no ``[ ] * ?``, spaces or leading ``-`` reach the folder name."""
    assert path_component(name) == folder
    assert not set(folder) & set("[]*? \t'\"$`!;&|<>(){}~#")


def test_two_models_share_an_out_and_a_rerun_keeps_then_overwrites(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert _demo(out) == EXIT_OK
    assert _demo(out, "--defect", "swap_lr", "--record", "off") == EXIT_OK
    clean = out / "procedural-world-clean" / "008_AD"
    swap = out / "procedural-world-swap_lr" / "008_AD"
    assert (clean / "scores.json").is_file() and (swap / "scores.json").is_file()
    assert (clean / "recording" / "video.mp4").is_file()
    assert not (swap / "recording").exists()  # --record off
    capsys.readouterr()

    # a re-run keeps the existing episode, says so, and exits 2 (nothing was evaluated)
    before = (clean / "scores.json").stat().st_mtime_ns
    assert _demo(out) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "already holds results, kept" in err and "--overwrite" in err and str(clean) in err
    assert (clean / "scores.json").stat().st_mtime_ns == before

    # --overwrite replaces it; results.jsonl keeps one line per (model, episode)
    assert _demo(out, "--overwrite") == EXIT_OK
    assert (clean / "scores.json").stat().st_mtime_ns != before
    lines = _lines(out)
    assert sorted((str(e["model"]), str(e["episode"])) for e in lines) == [
        ("procedural-world[clean]", "008_AD"),
        ("procedural-world[swap_lr]", "008_AD"),
    ]
    assert all(e["status"] == "complete" and e["reason"] is None for e in lines)


def test_resume_skips_finished_and_reruns_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["demo", "--out", str(out), *SHORT, "--actions", "8,9", "--record", "off"]) == 0
    finished = out / "procedural-world-clean" / "008_AD"
    unfinished = out / "procedural-world-clean" / "009_WR"
    doc = json.loads((unfinished / "scores.json").read_text())
    doc["complete"] = False
    (unfinished / "scores.json").write_text(json.dumps(doc))
    mtime = (finished / "scores.json").stat().st_mtime_ns
    capsys.readouterr()
    code = main(["demo", "--out", str(out), *SHORT, "--actions", "8,9", "--resume"])
    err = capsys.readouterr().err
    assert code == EXIT_OK
    assert "finished before, skipped (--resume)" in err and "1 skipped" in err
    assert (finished / "scores.json").stat().st_mtime_ns == mtime
    assert json.loads((unfinished / "scores.json").read_text())["complete"] is True
    assert len(_lines(out)) == 2


def test_replaying_an_episodes_own_recording_over_it_keeps_the_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``replay OUT/m/e/recording --out OUT --overwrite`` scores the live run again from what
    it recorded: clearing the folder must not delete the input before it is read."""
    out = tmp_path / "out"
    assert _demo(out) == EXIT_OK
    episode = out / "procedural-world-clean" / "008_AD"
    recording = episode / "recording"
    args = [
        "replay",
        str(recording),
        "--out",
        str(out),
        "--no-tui",
        "-q",
        "--overwrite",
        "--no-report",
    ]
    assert main([*args, "--cuts", "scenedetect-content"]) == EXIT_OK, capsys.readouterr().err
    assert (recording / "video.mp4").is_file()
    assert json.loads((episode / "scores.json").read_text())["complete"] is True


def test_decide_without_results_runs_everything(tmp_path: Path) -> None:
    d = tmp_path / "m" / "e"
    d.mkdir(parents=True)  # an empty folder is not a former run
    assert decide([d], "keep").run == [d]


def test_attach_finds_a_module_in_the_working_directory_and_names_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = "streameval_user_model_fixture"
    (tmp_path / f"{module}.py").write_text(
        textwrap.dedent(
            """
            import numpy as np

            class Model:
                fps = 16.0

                def __init__(self):
                    rng = np.random.default_rng(1)
                    self.canvas = rng.integers(0, 256, (48, 320, 3), dtype=np.uint8)
                    self.x = 120

                def step(self, key):
                    self.x += {"A": -2, "D": 2}.get(key, 0)
                    return np.ascontiguousarray(self.canvas[:, self.x : self.x + 64])

            def make():
                return Model()
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setattr("sys.path", [p for p in __import__("sys").path if p not in ("", ".")])
    out = tmp_path / "out"
    url = f"python:{module}:make"
    args = ["--out", str(out), "--model-name", "my-model", "--record", "lossy"]
    code = main(["attach", url, *args, *SHORT])
    assert code == EXIT_OK, capsys.readouterr().err
    episode = out / "my-model" / "008_AD"
    doc = json.loads((episode / "scores.json").read_text())
    assert doc["model"] == "my-model"
    provenance = doc["provenance"]  # versions, a timestamp and the source
    assert provenance["source"] == "python:my-model"
    assert provenance["created_at"].endswith("+00:00")
    assert {"python", "numpy", "opencv", "av"} <= set(provenance["versions"])
    meta = json.loads((episode / "recording" / "meta.json").read_text())
    assert meta["video_quality"] == "lossy" and meta["complete"] is True
    assert os.path.getsize(episode / "recording" / "video.mp4") > 0
    assert f"results in {out}" in capsys.readouterr().err


_NAMED_MODULE = """
import numpy as np

class Drawn:
    fps = 16.0

    def __init__(self):
        self.canvas = np.random.default_rng(1).integers(0, 256, (48, 320, 3), dtype=np.uint8)
        self.x = 120

    def step(self, key):
        self.x += {"A": -2, "D": 2}.get(key, 0)
        return np.ascontiguousarray(self.canvas[:, self.x : self.x + 64])

class Named(Drawn):
    name = "toy[v2]"

def make_named():
    return Named()

def make_plain():
    return Drawn()
"""


@pytest.mark.parametrize(
    ("factory", "flag", "model", "folder"),
    [
        ("make_named", None, "toy[v2]", "toy-v2"),  # model.name, its folder shell-safe
        ("make_named", "my-model", "my-model", "my-model"),  # --model-name wins
        ("make_plain", None, "Drawn", "Drawn"),  # no name: the class, never the factory
    ],
)
def test_attach_python_names_the_model_by_flag_then_name_then_class(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    factory: str,
    flag: str | None,
    model: str,
    folder: str,
) -> None:
    module = f"streameval_named_fixture_{factory}_{flag is not None}"
    (tmp_path / f"{module}.py").write_text(_NAMED_MODULE)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    args = ["--out", str(out), "--record", "off", *(["--model-name", flag] if flag else [])]
    assert main(["attach", f"python:{module}:{factory}", *args, *SHORT]) == EXIT_OK
    assert [p.name for p in out.iterdir() if p.is_dir()] == [folder]
    doc = json.loads((out / folder / "008_AD" / "scores.json").read_text())
    assert doc["model"] == model
    assert [e["model"] for e in _lines(out)] == [model]


def test_ctrl_c_is_not_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("streameval.cli.demo.run_spec", interrupted)
    assert _demo(tmp_path) == EXIT_INTERRUPTED == 130
    assert "interrupted" in capsys.readouterr().err


def test_the_adapter_guide_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    guide = Path(__file__).resolve().parents[2] / "docs" / "evaluate-your-model.md"
    code = guide.read_text().split("```python\n", 1)[1].split("```", 1)[0]
    module = "streameval_guide_adapter"
    (tmp_path / f"{module}.py").write_text(code)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "results"
    args = ["--out", str(out), "--model-name", "my-model", "--record", "off"]
    assert main(["attach", f"python:{module}:make", *args, *GUIDE_SHORT]) == EXIT_OK
    doc = json.loads((out / "my-model" / "008_AD" / "scores.json").read_text())
    assert doc["metrics"]["direction_accuracy_trans"]["status"] == "official"
    # a flat slide has no parallax: it moves the commanded way (> 50) but reads partly as
    # a turn, so the strafe's accuracy is not 100 (measured 76.3)
    assert 50 < doc["metrics"]["direction_accuracy_trans"]["normalized"] < 100

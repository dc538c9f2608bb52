"""memory_loop from the command line: demo → OUT/<model>/<trajectory>/, the WorldAtlas columns
in ``table``, the replay of the recording reading the pose sidecar, and network attach's keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streameval.cli.main import main
from streameval.results.layout import episode_dir
from streameval.runs.builders import network_episodes
from streameval.runs.memory_loop import LoopPlan
from streameval.transports.urls import AttachOptions

# one worker runs the whole module with test_cli_bad_sidecars: the demo both read
# (tests/cli/conftest.py) is rendered once, not per worker
pytestmark = pytest.mark.xdist_group("cli-memory-loop")

NAMES = ("memory_return_gate", "keystroke_natet", "keystroke_nater", "memory_scene_f1")
MODEL = "procedural-world[clean]"


@pytest.fixture(scope="module")
def loop_out(dolly_loop_out: Path) -> Path:
    """The shared 3 s dolly_loop demo (tests/cli/conftest.py); read, never changed."""
    return dolly_loop_out


def test_demo_loop_results_and_table(loop_out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    episode = episode_dir(loop_out, MODEL, "dolly_loop")
    doc = json.loads((episode / "scores.json").read_text())
    assert doc["suite"] == "memory_loop" and doc["frames"] == 72
    gate = doc["metrics"]["memory_return_gate"]
    assert gate["status"] == "official" and gate["raw"] == 1.0
    assert gate["details"]["pose_source"] == "model"
    assert doc["metrics"]["memory_scene_f1"]["raw"] > 0.99
    assert (episode / "recording" / "poses.npy").is_file()
    capsys.readouterr()
    assert main(["table", str(loop_out), "--include-all", "--csv"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert all(name in header for name in NAMES)


def test_replay_of_the_recording_scores_the_sidecar_poses_alike(
    loop_out: Path, tmp_path: Path
) -> None:
    recording = episode_dir(loop_out, MODEL, "dolly_loop") / "recording"
    assert json.loads((recording / "meta.json").read_text())["trajectory"] == "dolly_loop"
    assert main(["replay", str(recording), "--out", str(tmp_path), "--no-tui", "--no-report"]) == 0
    live = json.loads((episode_dir(loop_out, MODEL, "dolly_loop") / "scores.json").read_text())
    doc = json.loads((episode_dir(tmp_path, MODEL, "dolly_loop") / "scores.json").read_text())
    assert doc["metrics"]["memory_return_gate"]["details"]["pose_source"] == "vipe_sidecar"
    for name in ("memory_return_gate", "keystroke_nater"):
        assert doc["metrics"][name]["raw"] == live["metrics"][name]["raw"], name
    assert doc["metrics"]["memory_scene_f1"]["raw"] == pytest.approx(
        live["metrics"]["memory_scene_f1"]["raw"], abs=0.02
    )  # depth went through the recording's float16 sidecar


def test_worldmark_results_carry_no_worldatlas_metric(tmp_path: Path) -> None:
    argv = ["demo", "--no-tui", "--out", str(tmp_path), "--actions", "8", "--seconds-per-key"]
    assert main([*argv, "1", "--record", "off"]) == 0
    doc = json.loads((episode_dir(tmp_path, MODEL, "008_AD") / "scores.json").read_text())
    assert not set(NAMES) & set(doc["metrics"])


def test_network_attach_drives_the_loop_tokens() -> None:
    options = AttachOptions(clock=None, seconds_per_key=20.0)
    loops = LoopPlan(("square_loop",), 48.0)
    [(episode, keys, opts)] = network_episodes(options, suite="memory_loop", loops=loops)
    assert episode == "square_loop"
    assert keys == ("W", "W", "W", "R", "R", "R") * 4
    assert opts.seconds_per_key == pytest.approx(2.0)  # 48 s over 24 tokens


def test_bad_loop_seconds_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["demo", "--no-tui", "--out", str(tmp_path), "--suite", "memory_loop"]
    assert main([*argv, "--loop-seconds", "0"]) == 2
    assert "--loop-seconds" in capsys.readouterr().err


def test_amnesia_forgets_at_the_turnaround_of_any_loop_length(tmp_path: Path) -> None:
    """The preset's 30 s is half a 60 s loop: a 12 s loop forgets at 6 s, its turnaround."""
    from streameval.worlds.procedural_world import world_config_for_defect

    from streameval.runs.memory_loop import demo_loop_jobs

    plan = LoopPlan(("dolly_loop",), 12.0)
    [job] = demo_loop_jobs(plan, tmp_path, world_config_for_defect("amnesia"), "m", lambda _: [])
    world = job.open_source().model  # type: ignore[attr-defined]
    assert world.config.forget_scene_at_s == pytest.approx(6.0)


@pytest.mark.parametrize(
    ("gram", "says"),
    [("vgg16-gram:/nonexistent/vgg16.pth", "/nonexistent/vgg16.pth"), ("vgg17-gram", "vgg16-gram")],
)
def test_gram_backend_is_chosen_on_the_command_line(
    loop_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], gram: str, says: str
) -> None:
    """``--gram``: a VGG checkpoint that is not there, or a name that is not registered, is
    one line naming it (exit 2) before any episode runs."""
    rollout = episode_dir(loop_out, MODEL, "dolly_loop") / "recording"
    capsys.readouterr()
    code = main(["replay", str(rollout), "--out", str(tmp_path / "o"), "--no-tui", "--gram", gram])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert says in err, err

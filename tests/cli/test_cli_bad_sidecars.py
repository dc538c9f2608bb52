"""Replaying a memory_loop rollout whose sidecars are unusable (docs/cli.md#memory_loop-suite): the
episode is still replayed and scored, the WorldAtlas metrics that need the bad file are ``missing``
with a reason naming the file and the defect, one ``error: <path>: <what>`` line is printed, the
exit status is 2, and ``rescore`` gives the same statuses (the reasons live in the episode
cache)."""

from __future__ import annotations

import json
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from streameval.cli.main import main
from streameval.results.layout import episode_dir

# one worker runs the whole module with test_cli_memory_loop: the demo recording both read
# (tests/cli/conftest.py) is rendered once, not per worker
pytestmark = pytest.mark.xdist_group("cli-memory-loop")

MODEL = "procedural-world[clean]"
POSE_METRICS = ("memory_return_gate", "keystroke_natet", "keystroke_nater", "memory_scene_f1")


@pytest.fixture(scope="module")
def recording(dolly_loop_out: Path) -> Path:
    """The shared 3 s dolly_loop demo's recording (read-only: each test spoils a copy)."""
    return episode_dir(dolly_loop_out, MODEL, "dolly_loop") / "recording"


def _nan_pose(d: Path) -> None:
    poses = np.load(d / "poses.npy")
    poses[12, 0, 3] = np.nan
    np.save(d / "poses.npy", poses)


def _pose_shape(d: Path) -> None:
    np.save(d / "poses.npy", np.load(d / "poses.npy")[:, :3, :])


def _nan_intrinsics(d: Path) -> None:
    k = np.load(d / "intrinsics.npy")
    k[0, 0] = np.inf
    np.save(d / "intrinsics.npy", k)


def _depth_shape(d: Path) -> None:
    np.save(d / "depth_metric.npy", np.load(d / "depth_metric.npy")[:, 0, :])


def _mask_without_mask(d: Path) -> None:
    with zipfile.ZipFile(d / "depth_valid_mask.npz", "w"):
        pass  # an archive that holds no mask array


def _mask_shape(d: Path) -> None:
    depth = np.load(d / "depth_metric.npy")
    np.savez_compressed(d / "depth_valid_mask.npz", mask=np.ones(depth.shape[:2], bool))


CASES: list[tuple[str, Callable[[Path], None], str, str, tuple[str, ...]]] = [
    ("nan_pose", _nan_pose, "poses.npy", "non-finite pose at frame 12", POSE_METRICS),
    ("pose_shape", _pose_shape, "poses.npy", "shape (72, 3, 4)", POSE_METRICS),
    ("intrinsics", _nan_intrinsics, "intrinsics.npy", "non-finite values", ("memory_scene_f1",)),
    ("depth_shape", _depth_shape, "depth_metric.npy", "shape (72, 640)", ("memory_scene_f1",)),
    ("no_mask", _mask_without_mask, "depth_valid_mask.npz", "which array is the mask",
     ("memory_scene_f1",)),
    ("mask_shape", _mask_shape, "depth_valid_mask.npz", "mask shape", ("memory_scene_f1",)),
]  # fmt: skip


# `make test`: one spoiled pose (the pose columns go missing) and one spoiled depth-family
# file (memory_scene_f1 and global_memory go missing): the mask archive with no mask, whose
# reader message no other test checks. `make test-long` adds the other spoilings: the same
# path end to end, each also checked at the reader by tests/replay/test_replay_bad_input.py
# (intrinsics, depth and mask shapes, a non-finite pose).
IN_MAKE_TEST = ("nan_pose", "no_mask")


@pytest.mark.parametrize(
    ("case", "spoil", "file", "says", "needs"),
    [c if c[0] in IN_MAKE_TEST else pytest.param(*c, marks=pytest.mark.long) for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_bad_sidecar_gives_missing_metrics_not_a_refusal(
    recording: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
    spoil: Callable[[Path], None],
    file: str,
    says: str,
    needs: tuple[str, ...],
) -> None:
    rollout = tmp_path / "dolly_loop"
    shutil.copytree(recording, rollout)
    spoil(rollout)
    out = tmp_path / "out"
    capsys.readouterr()
    # the sidecars are what is tested: the cheaper cut detector, and no report
    # (--no-report is checked here too: nothing but results is written)
    argv = ["replay", str(rollout), "--out", str(out), "--no-tui", "--no-report"]
    code = main([*argv, "--cuts", "scenedetect-adaptive"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code == 2
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {rollout / file}: "), errors
    assert says in errors[0], errors
    assert not (out / "index.html").exists()
    assert f"reports: streameval report {out}" in err
    scores = episode_dir(out, MODEL, "dolly_loop") / "scores.json"
    doc = json.loads(scores.read_text())
    metrics = doc["metrics"]
    for name in POSE_METRICS:
        if name in needs:
            assert metrics[name]["status"] == "missing", name
            assert file in metrics[name]["reason"] and says in metrics[name]["reason"], name
        else:
            assert metrics[name]["status"] == "official", (name, metrics[name])
    # Global Memory needs pose, depth (its mask with it) and intrinsics of its views: missing,
    # naming the file, when one of them was unusable (it said "no reconstruction backend")
    glob = metrics["global_memory"]
    assert glob["status"] == "missing" and file in glob["reason"] and says in glob["reason"]
    # control and memory metrics of the same episode are scored as usual
    assert metrics["direction_accuracy_trans"]["status"] == "official"
    # rescore reads the reasons back from the cache: bit-identical
    before = scores.read_bytes()
    assert main(["rescore", str(episode_dir(out, MODEL, "dolly_loop"))]) == 0
    assert json.loads(scores.read_text())["metrics"] == json.loads(before)["metrics"]


def test_the_python_api_lists_the_bad_sidecar_and_a_link_out_of_out(
    recording: Path, tmp_path: Path
) -> None:
    """``streameval.evaluate`` says what the command line says: the unusable sidecar in
    ``input_problems`` (the episode still scored), and an episode whose results folder would
    lie outside ``out`` through a planted link in ``bad_input`` — the others still run."""
    import streameval

    spoiled, other = tmp_path / "dolly_loop", tmp_path / "other" / "dolly_loop"
    shutil.copytree(recording, spoiled)
    _nan_pose(spoiled)
    out = tmp_path / "out"
    result = streameval.evaluate(rollouts=[spoiled], out=out, reports=False)
    assert result.bad_input == []
    assert len(result.input_problems) == 1 and "poses.npy" in result.input_problems[0]
    assert "non-finite pose at frame 12" in result.input_problems[0]
    (outcome,) = result.outcomes
    assert outcome.scores.metrics["memory_return_gate"].status == "missing"

    # a second output folder whose model folder is a link to elsewhere: refused, not written
    shutil.copytree(recording, other)
    meta = json.loads((other / "meta.json").read_text())
    meta["model"] = "linked"
    (other / "meta.json").write_text(json.dumps(meta))
    out2, elsewhere = tmp_path / "out2", tmp_path / "elsewhere"
    out2.mkdir()
    elsewhere.mkdir()
    (out2 / "linked").symlink_to(elsewhere)
    result = streameval.evaluate(rollouts=[other, spoiled], out=out2, reports=False)
    assert len(result.bad_input) == 1 and "outside the output folder" in result.bad_input[0]
    assert [o.info.model for o in result.outcomes] == [MODEL]
    assert list(elsewhere.iterdir()) == []

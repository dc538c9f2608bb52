"""Ray is an optional extra: without ``--ray`` nothing of it is imported, and ``--ray``'s
optional ADDRESS never swallows a rollout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streameval.cli.main import build_parser, main
from streameval.cli.ray import looks_like_address, split_ray_flag
from tests.replay.replay_synth import make_rollout_dir


def test_replay_and_rescore_without_ray_never_import_it(tmp_path: Path) -> None:
    rollout = make_rollout_dir(tmp_path / "r", ["D"] * 8 + ["A"] * 8)
    out = tmp_path / "out"
    # a fresh interpreter: another test of this session may have imported Ray already
    code = (
        "import sys\n"
        "from streameval.cli.main import main\n"
        f"a = main(['replay', {str(rollout)!r}, '--out', {str(out)!r}, '--no-tui', "
        "'--cuts', 'scenedetect-adaptive'])\n"
        f"b = main(['rescore', {str(out)!r}])\n"
        "loaded = sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.'))\n"
        "print('RAY', loaded, a, b)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "RAY [] 0 0" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("argv", "address", "rollouts"),
    [
        (["replay", "--ray", "runs/", "--out", "o"], "local", ["runs/"]),
        (["replay", "--ray", "auto", "runs/", "--out", "o"], "auto", ["runs/"]),
        (["replay", "--ray", "10.0.0.5:6379", "a", "--out", "o"], "10.0.0.5:6379", ["a"]),
        (["replay", "--ray", "ray://head:10001", "a", "--out", "o"], "ray://head:10001", ["a"]),
        (["replay", "a", "b", "--out", "o", "--ray"], "local", ["a", "b"]),
    ],
)
def test_bare_ray_flag_does_not_take_a_rollout_for_its_address(
    argv: list[str], address: str, rollouts: list[str]
) -> None:
    args = build_parser().parse_args(split_ray_flag(argv))
    assert args.ray == address
    assert [str(p) for p in args.rollouts] == [str(Path(r)) for r in rollouts]


def test_address_shapes() -> None:
    assert looks_like_address("auto") and looks_like_address("head-node.local:6379")
    assert not looks_like_address("runs/model") and not looks_like_address("video.mp4")


def test_gpus_without_ray_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rollout = make_rollout_dir(tmp_path / "r", ["W"] * 4)
    status = main(["replay", str(rollout), "--out", str(tmp_path / "o"), "--gpus-per-episode", "1"])
    assert status == 2
    assert capsys.readouterr().err.strip() == "error: --gpus-per-episode: only with --ray"

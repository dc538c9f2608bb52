"""Bad input to ``replay`` (docs/cli.md#bad-input): path escape, parser limits, numbers, wrong
files, bad geometry and messages. Each bad rollout is one line naming its file; the good one beside
it is still scored; nothing is written outside ``--out``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from streameval.cli.main import main
from tests.replay.replay_synth import make_rollout_dir, write_meta

FAST = ["--no-tui", "--cuts", "scenedetect-content"]
KEYS = ["A"] * 12 + ["D"] * 12


def replay(
    args: list[str], capsys: pytest.CaptureFixture[str], *, reports: bool = False
) -> tuple[int, list[str]]:
    """``replay`` with the cheap cut detector; no report.html/index.html unless ``reports``
    (writing them costs more than scoring these tiny rollouts, and only the path-escape test
    is about where they go)."""
    code = main(["replay", *args, *FAST, *([] if reports else ["--no-report"])])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, [line for line in err.splitlines() if line.startswith("error: ")]


def files_under(root: Path) -> set[Path]:
    return set(root.rglob("*"))


@pytest.mark.parametrize(
    "episode",
    ["../../escaped", "/tmp/streameval-abs-escape", "a\u0000b", "x" * 300, "../" * 20 + "etc"],
)
def test_episode_name_cannot_escape_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], episode: str
) -> None:
    rollout = make_rollout_dir(tmp_path / "in" / "r", KEYS)
    write_meta(rollout, episode=episode)
    out = tmp_path / "work" / "out"
    work = tmp_path / "work"
    before = files_under(tmp_path)
    code, errors = replay([str(rollout), "--out", str(out)], capsys, reports=True)
    after = files_under(tmp_path) - files_under(work) - {work}
    assert after == before  # nothing new outside --out
    assert not Path("/tmp/streameval-abs-escape").exists()
    if "\u0000" in episode:  # refused by the meta.json schema: control characters
        assert code == 2 and len(errors) == 1 and "meta.json: episode" in errors[0]
        return
    assert code == 0, errors
    written = [p for p in out.rglob("scores.json")]
    assert len(written) == 1 and all(len(part) <= 100 for part in written[0].parts)


def test_lone_surrogate_episode_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rollout = make_rollout_dir(tmp_path / "r", KEYS)
    text = (rollout / "meta.json").read_text().replace('"format"', '"episode": "\\ud800", "format"')
    (rollout / "meta.json").write_text(text)
    code, errors = replay([str(rollout), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and len(errors) == 1 and "meta.json: episode" in errors[0]


@pytest.mark.parametrize(
    ("file", "content", "says"),
    [
        ("meta.json", "[" * 100_000 + "]" * 100_000, "nested 100000 levels deep"),
        ("meta.json", '{"fps": ' + "9" * 5000 + "}", "integer with 5000 digits"),
        ("meta.json", '{"fps": NaN}', "NaN is not a JSON number"),
        ("actions.jsonl", '{"frame": 0, "key": "W", "x": ' + "[" * 5000 + "]" * 5000 + "}",
         "line 1: JSON nested"),
        ("actions.jsonl", '{"frame": ' + "1" * 5000 + ', "key": "W"}', "line 1: integer with"),
        ("keys.jsonl", '{"frame": 0, "key": "W", "t_wall": 1e400}', "line 1: number 1e400"),
    ],
)  # fmt: skip
def test_parser_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str, content: str, says: str
) -> None:
    good = make_rollout_dir(tmp_path / "good", KEYS)
    bad = make_rollout_dir(tmp_path / "bad", KEYS)
    (bad / file).write_text(content)
    code, errors = replay([str(good), str(bad), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and len(errors) == 1, errors
    assert errors[0].startswith(f"error: {bad / file}: ") and says in errors[0], errors
    assert len(list((tmp_path / "out").rglob("scores.json"))) == 1  # the good one still scored


@pytest.mark.parametrize("fps", [1e308, 1e-9, 1e-300, 0.001, -16, 0])
def test_fps_out_of_range_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fps: float
) -> None:
    bad = make_rollout_dir(tmp_path / "bad", KEYS)
    write_meta(bad, fps=fps)
    code, errors = replay([str(bad), "--realtime", "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and len(errors) == 1
    assert "fps" in errors[0] and "outside [1, 1000]" in errors[0]


@pytest.mark.parametrize("fps", [240, 8, 17])
def test_meta_fps_the_video_contradicts_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fps: float
) -> None:
    # an independent fuzzer: meta.json said 240 fps over a 16 fps video, scored as if 240
    good = make_rollout_dir(tmp_path / "good", KEYS)
    bad = make_rollout_dir(tmp_path / "bad", KEYS)  # video.mp4 at 16 fps
    write_meta(bad, fps=fps)
    code, errors = replay([str(good), str(bad), "--out", str(tmp_path / "out")], capsys)
    assert code == 2
    assert errors == [
        f"error: {bad / 'meta.json'}: fps {fps} but video.mp4 runs at 16 fps (more than 5% apart)"
    ]
    assert len(list((tmp_path / "out").rglob("scores.json"))) == 1  # the good one still scored


def test_meta_fps_within_a_few_percent_of_the_video_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rollout = make_rollout_dir(tmp_path / "r", KEYS, fps=29.97)
    write_meta(rollout, fps=30)  # the nominal rate of an NTSC video
    code, errors = replay([str(rollout), "--out", str(tmp_path / "out")], capsys)
    assert code == 0 and errors == []
    (scores,) = (tmp_path / "out").rglob("scores.json")
    assert json.loads(scores.read_text())["fps"] == 30


def _save(path: Path, arr: np.ndarray) -> None:
    with path.open("wb") as f:
        np.save(f, arr)


def _poses(n: int) -> np.ndarray:
    poses = np.tile(np.eye(4), (n, 1, 1))
    poses[:, 0, 3] = np.arange(n) * 0.1
    return poses


@pytest.mark.parametrize(
    ("name", "make", "says"),
    [
        ("poses.npy", lambda p: np.savez(p.with_suffix(".tmp.npz"), a=np.eye(4)),
         "is an .npz archive saved under a .npy name"),
        ("poses.npy", lambda p: _save(p, np.array([{"a": 1}], dtype=object)),
         "holds Python objects"),
        ("poses.npy", lambda p: _save(p, _poses(24) * np.array([1000.0, 1000, 1000, 1])),
         "frame 0: rotation part is not orthonormal"),
        ("poses.npy", lambda p: _save(p, _poses(24) @ np.diag([-1.0, 1, 1, 1])),
         "frame 0: rotation part is a reflection"),
        ("intrinsics.npy", lambda p: _save(p, np.array([[100, 0, 16], [5, 100, 12], [0, 0, 1.0]])),
         "not pinhole intrinsics"),
        ("intrinsics.npy", lambda p: _save(p, np.array([[-100, 0, 16], [0, 100, 12], [0, 0, 1.0]])),
         "focal lengths"),
        ("poses.npy", lambda p: p.mkdir(), "not a regular file"),
        ("depth_metric.npy", lambda p: p.symlink_to(p), "not a regular file"),
    ],
)  # fmt: skip
def test_wrong_sidecars_are_reported_and_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, make: object, says: str
) -> None:
    """An unusable sidecar no longer refuses the episode: it is left out, named in one error
    line, the episode is scored without it, and the exit status is 2."""
    bad = make_rollout_dir(tmp_path / "bad", KEYS)
    target = bad / name
    make(target)  # type: ignore[operator]
    if target.with_suffix(".tmp.npz").exists():
        target.with_suffix(".tmp.npz").rename(target)
    code, errors = replay([str(bad), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and len(errors) == 1, errors
    assert errors[0].startswith(f"error: {target}: ") and says in errors[0], errors
    assert "allow_pickle" not in errors[0]
    assert len(list((tmp_path / "out").rglob("scores.json"))) == 1  # scored all the same


def test_meta_json_folder_is_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = make_rollout_dir(tmp_path / "bad", KEYS)
    (bad / "meta.json").unlink()
    (bad / "meta.json").mkdir()
    code, errors = replay([str(bad), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and errors == [f"error: {bad / 'meta.json'}: is not a regular file"]


def test_frames_under_16_px_are_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = make_rollout_dir(tmp_path / "bad", KEYS, size=(12, 10))
    code, errors = replay([str(bad), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and len(errors) == 1 and "frame 0 is 10×12, sides must be" in errors[0]
    doc = json.loads(next((tmp_path / "out").rglob("scores.json")).read_text())
    assert doc["complete"] is False


def _out_cases(tmp: Path) -> dict[str, Path]:
    a_file = tmp / "a_file"
    a_file.write_text("x")
    loop = tmp / "loop"
    loop.symlink_to(loop)
    return {
        "a file": a_file,
        "under a file": a_file / "sub",
        "in /proc": Path("/proc/self/streameval-out"),
        "a symlink loop": loop / "out",
    }


@pytest.mark.parametrize("case", ["a file", "under a file", "in /proc", "a symlink loop"])
def test_bad_out_is_refused_before_decoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    good = make_rollout_dir(tmp_path / "good", KEYS)
    out = _out_cases(tmp_path)[case]
    code, errors = replay([str(good), "--out", str(out)], capsys)
    assert code == 2 and len(errors) == 1 and errors[0].startswith("error: --out: "), errors


def test_unwritable_out_inside_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes everywhere")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    good = make_rollout_dir(tmp_path / "good", KEYS)
    code, errors = replay([str(good), "--out", str(locked / "out")], capsys)
    assert code == 2 and "not writable" in errors[0]

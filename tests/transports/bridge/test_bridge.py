"""The bridge (``attach python:M:F --python PATH``): a model in its own environment.

The model's interpreter is a second virtual environment holding numpy of another version and
no streameval (made once per machine, cached). The adapter scores as the same adapter run
in process; its chatter on stdout (Python and C level) does not break the channel; a worker
that segfaults, hangs or returns a bad frame ends that episode incomplete with its own words,
and the next episode gets a fresh worker."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streameval.cli.main import main

pytestmark = pytest.mark.xdist_group("bridge")
HERE = Path(__file__).resolve().parent
ADAPTERS = HERE / "adapter_world.py"
OTHER_NUMPY = "2.0.2"  # streameval's environment has a later one


def _base_python() -> str:
    base = getattr(sys, "_base_executable", None)
    return base if base and Path(base).exists() else (shutil.which("python3") or sys.executable)


@pytest.fixture(scope="session")
def model_python() -> Path:
    """A venv with numpy (another version when PyPI can be reached) and no streameval."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "streameval-tests"
    venv = cache / f"bridge-venv-numpy{OTHER_NUMPY}"
    python = venv / "bin" / "python"
    if python.exists() and (venv / ".ready").exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([_base_python(), "-m", "venv", str(venv)], check=True, timeout=120)
    got = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         f"numpy=={OTHER_NUMPY}"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if got.returncode != 0:
        if os.environ.get("STREAMEVAL_REQUIRE_BROKER"):  # CI: PyPI is there, so this is a bug
            raise RuntimeError(f"pip install numpy=={OTHER_NUMPY} failed: {got.stderr[-500:]}")
        # offline: streameval's own numpy, linked in alone (still no streameval there)
        site = next((venv / "lib").glob("python3*/site-packages"))
        for name in ("numpy", "numpy.libs"):
            source = Path(np.__file__).parent.parent / name
            if source.exists():
                (site / name).symlink_to(source)
    (venv / ".ready").write_text("ok")
    return python


def _attach(tmp_path: Path, python: Path | None, factory: str, *args: str) -> tuple[int, Path]:
    out = tmp_path / ("bridged" if python else "inprocess") / factory
    extra = ["--python", str(python)] if python else []
    code = main([
        "attach", f"python:{ADAPTERS}:{factory}", *extra, "--out", str(out), "--no-tui",
        "--no-report", "--record", "off", "--seconds-per-key", "4.5", *args,
    ])  # fmt: skip
    return code, out


def _scores(out: Path) -> dict[str, dict[str, object]]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(out.rglob("scores.json"))}


def test_the_model_environment_has_no_streameval_and_another_numpy(model_python: Path) -> None:
    probe = "import importlib.util as u, numpy; print(u.find_spec('streameval'), numpy.__version__)"
    got = subprocess.run([str(model_python), "-c", probe], capture_output=True, text=True, cwd="/")
    spec, version = got.stdout.split()
    assert spec == "None", got.stdout
    if not any((model_python.parent.parent / "lib").glob("*/site-packages/numpy-*.dist-info")):
        pytest.skip("offline: the model environment links streameval's own numpy")
    assert version == OTHER_NUMPY != np.__version__


@pytest.mark.timeout(300)
def test_bridged_scores_as_in_process(tmp_path: Path, model_python: Path) -> None:
    code, bridged = _attach(tmp_path, model_python, "pan_world", "--actions", "6,7")
    assert code == 0
    code, inprocess = _attach(tmp_path, None, "pan_world", "--actions", "6,7")
    assert code == 0
    a, b = _scores(bridged), _scores(inprocess)
    assert a.keys() == b.keys() == {"006_WS", "007_LR"}
    for episode in a:
        assert a[episode]["complete"] and b[episode]["complete"]
        for name, result in b[episode]["metrics"].items():  # type: ignore[attr-defined]
            if not name.startswith(("direction_", "motion_", "response_")):
                continue
            mine, theirs = a[episode]["metrics"][name]["normalized"], result["normalized"]  # type: ignore[index]
            assert (mine is None) == (theirs is None), (episode, name)
            if mine is not None:
                assert abs(mine - theirs) <= 0.5, (episode, name, mine, theirs)
    assert a["006_WS"]["metrics"]["direction_accuracy_trans"]["normalized"] >= 90  # type: ignore[index]


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("factory", "words"),
    [
        ("crashing", ("died (SIGSEGV); its last words:", "about to dereference NULL")),
        # `make test` keeps the segfault (a dead worker, then a fresh one); a hang and a bad
        # frame take the same road to the episode's end: `make test-long`
        pytest.param("hanging", ("no answer to step within",), marks=pytest.mark.long),
        pytest.param("bad_frame", ("frame 19",), marks=pytest.mark.long),
    ],
)
def test_a_worker_that_dies_hangs_or_sends_a_bad_frame_ends_only_its_episode(
    tmp_path: Path,
    model_python: Path,
    factory: str,
    words: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("BRIDGE_TEST_MARKER", str(tmp_path / "marker"))
    code, out = _attach(tmp_path, model_python, factory, "--actions", "6,8",
                        "--seconds-per-key", "2", "--step-timeout", "4")  # fmt: skip
    captured = capsys.readouterr()
    docs = _scores(out)
    first, second = docs["006_WS"], docs["008_AD"]
    assert not first["complete"]
    reasons = " ".join(str(e) for e in first["errors"])  # type: ignore[union-attr]
    assert all(w in reasons for w in words), reasons
    if factory != "bad_frame":  # a bad frame is the adapter's every episode; the others once
        assert second["complete"], second["errors"]
    assert code != 0 and "Traceback" not in captured.err


def test_a_frame_with_geometry_and_a_reset_with_an_image_cross_the_bridge(
    model_python: Path,
) -> None:
    from streameval.transports.bridge.host import BridgedModel
    from streameval.transports.inprocess.driver import reset_keywords

    model = BridgedModel(model_python, str(ADAPTERS), "with_geometry", url="python:t")
    try:
        assert (model.name, model.fps) == ("pan-world", 16)
        assert reset_keywords(model.reset) == {"image", "prompt"}
        start = np.random.default_rng(1).integers(0, 255, (180, 320, 3), dtype=np.uint8)
        model.reset(image=start, prompt="a street")
        frame = model.step("W")
        assert np.array_equal(frame.image, start)  # the adapter sends its start image back
        assert frame.depth.dtype == np.float32 and float(frame.depth[0, 0]) == 3.0
        assert frame.pose[0, 3] == pytest.approx(0.1) and frame.intrinsics[0] == 300.0
        second = model.step("D")
        assert second.image.shape == (180, 320, 3) and float(second.depth[5, 5]) == 4.0
    finally:
        model.close()
    assert model._worker is None


def test_a_broken_set_up_is_one_line(tmp_path: Path, model_python: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    code, _ = _attach(tmp_path, tmp_path / "no-python", "pan_world")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "no such file" in err[0], err
    code, _ = _attach(tmp_path, model_python, "no_such_factory")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "has no callable 'no_such_factory'" in err[-1], err
    code = main(["attach", "ws://127.0.0.1:9/x", "--python", str(model_python), "--out",
                 str(tmp_path / "o"), "--no-tui"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "runs a python: model, not ws://127.0.0.1:9/x" in err[-1], err


def _probe(
    capsys: pytest.CaptureFixture[str], factory: str, *args: str
) -> tuple[int, dict[str, Any], str]:
    code = main(["probe", f"python:{ADAPTERS}:{factory}", "--seconds", "1.5", "--rest", "1",
                 "--json", *args])  # fmt: skip
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


@pytest.mark.timeout(120)
def test_probe_through_the_bridge_sees_what_it_sees_in_process(
    model_python: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``probe python:… --python``: each key of a numpy-only world with parallax, stepped in
    the model's environment, measures exactly as in process (the same frames); crossed keys
    are named the same way; a worker that dies mid-probe ends it with its own words."""
    code, bridged, err = _probe(capsys, "ground_world", "--python", str(model_python))
    assert code == 0, err
    assert bridged["adapter"] == f"ground-world, python {model_python}"
    code, inprocess, _ = _probe(capsys, "ground_world")
    assert code == 0
    assert bridged["keys"] == inprocess["keys"] and bridged["no_key"] == inprocess["no_key"]
    assert bridged["mapping"] == {k: k for k in "WSADLR"}

    code, _, err = _probe(capsys, "crossed_world", "--python", str(model_python))
    assert code == 1 and "the adapter's 'L' does yaw right" in err

    monkeypatch.setenv("BRIDGE_TEST_MARKER", str(tmp_path / "marker"))
    code, crashed, err = _probe(capsys, "crashing", "--python", str(model_python))
    assert code == 1 and "Traceback" not in err
    (problem,) = crashed["problems"]
    assert problem.startswith("the probe did not finish:") and "died (SIGSEGV)" in problem

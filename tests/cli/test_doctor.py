"""``streameval doctor``: a broken set-up is one line per problem with its fix, exit 1; a good
one exits 0 (the bridge's interpreter, the adapter, backends' weights, the browser)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streameval.cli.main import main

ADAPTERS = Path(__file__).resolve().parents[1] / "transports" / "bridge" / "adapter_world.py"


def _doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = main(["doctor", *args])
    return code, capsys.readouterr().out.strip().splitlines()


@pytest.mark.timeout(240)
def test_a_good_set_up_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = _doctor(capsys, f"python:{ADAPTERS}:pan_world", "--cuts",
                          "scenedetect-adaptive")  # fmt: skip
    assert code == 0, lines
    assert lines[-1] == "all good" or lines[-1].endswith("warning(s)"), lines
    assert any(line.startswith("ok    step('W'): a 320×180 frame") for line in lines), lines
    assert any("reset(): takes image, prompt" in line for line in lines), lines


@pytest.mark.timeout(240)
def test_a_broken_set_up_is_one_line_per_problem_with_its_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))  # no weights anywhere
    code, lines = _doctor(capsys, f"python:{ADAPTERS}:no_such_factory", "--depth",
                          "depth-anything", "--cuts", "scenedetect-adaptive")  # fmt: skip
    failures = [line for line in lines if line.startswith("FAIL")]
    assert code == 1 and len(failures) == 2, lines
    factory, weights = failures
    assert "has no callable 'no_such_factory'" in factory
    assert "— fix: define no_such_factory() in" in factory
    assert "--depth depth-anything" in weights and "— fix: fetch it with `hf download" in weights
    assert lines[-1] == "2 problem(s), 0 warning(s)"

    monkeypatch.setenv("PATH", str(tmp_path))  # a machine without Chromium
    code, lines = _doctor(capsys, "browser+http://127.0.0.1:9/world", "--cuts",
                          "scenedetect-adaptive")  # fmt: skip
    failures = [line for line in lines if line.startswith("FAIL")]
    assert code == 1, lines
    assert any(
        line.startswith("FAIL  Chromium: not found") and "apt-get install chromium" in line
        for line in failures
    ), failures
    assert any("127.0.0.1:9 does not answer" in line and "start the server" in line
               for line in failures)  # fmt: skip


@pytest.mark.timeout(120)
def test_a_missing_interpreter_and_a_missing_module_name_their_fixes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nope" / "python")
    code, lines = _doctor(capsys, f"python:{ADAPTERS}:pan_world", "--python", missing,
                          "--cuts", "scenedetect-adaptive")  # fmt: skip
    assert code == 1 and any(
        line.startswith(f"FAIL  --python {tmp_path}/nope/python: no such file — fix: point")
        for line in lines
    ), lines
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_package_xyz\n\ndef make():\n    return None\n")
    code, lines = _doctor(capsys, f"python:{broken}:make", "--cuts", "scenedetect-adaptive")
    (failure,) = [line for line in lines if line.startswith("FAIL")]
    assert code == 1 and "-m pip install no_such_package_xyz" in failure, failure

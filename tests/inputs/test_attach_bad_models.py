"""``attach python:`` against misbehaving models: one line each, never a traceback or a hang.

The bad input of ``attach`` (docs/cli.md#bad-input): a factory, import or ``reset()`` that raises;
``step()`` raising ``SystemExit(3)``; a ``step()`` that never returns; frames that change size (now
the same rule as replay: the episode ends incomplete); wrong-shaped per-frame geometry; absurd fps.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from streameval.cli.main import main

# no report.html: these tests read scores and error lines, tests/report/ checks reports
FAST = ["--no-tui", "--no-report", "--cuts", "scenedetect-content"]
FAST += ["--actions", "8", "--seconds-per-key", "1"]


def attach(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, list[str]]:
    code = main(["attach", f"python:tests.inputs.models:{name}", "--out", str(tmp_path), *FAST,
                 *extra])  # fmt: skip
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, [line for line in err.splitlines() if line.startswith("error: ")]


def scores(tmp_path: Path) -> dict[str, object]:
    doc: dict[str, object] = json.loads(next(tmp_path.glob("*/008_AD/scores.json")).read_text())
    return doc


def test_good_model_scores_complete(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, errors = attach(tmp_path, "good", capsys)
    assert code == 0 and errors == []
    assert scores(tmp_path)["complete"] is True and scores(tmp_path)["frames"] == 32


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("factory_raises", "factory_raises() raised RuntimeError: weights not found"),
        ("factory_exits", "factory_exits() raised SystemExit: 4"),
        ("no_such_factory", "has no callable 'no_such_factory'"),
        ("huge_fps", "fps 1000000000.0 is outside [1, 1000]"),
        ("tiny_fps", "fps 1e-09 is outside [1, 1000]"),
    ],
)
def test_model_that_cannot_start_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, says: str
) -> None:
    code, errors = attach(tmp_path, name, capsys)
    assert code == 2 and len(errors) == 1 and says in errors[0], errors
    assert errors[0].startswith("error: python:tests.inputs.models:")


def test_import_that_raises_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["attach", "python:tests.inputs.no_such_module:x", "--out", str(tmp_path), *FAST])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "cannot import" in err


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("reset_raises", "reset() failed: ValueError: cannot reset"),
        ("step_exits", "step('A') at frame 5 failed: SystemExit(3)"),
        ("resizes", "frame 10 is 48×56, but the episode's frames are 48×64 (size changed)"),
        ("tiny_frames", "frame 0 is 8×8, sides must be 16 to 16384 px"),
        ("bad_pose", "frame 0 pose shape (3, 3), expected (4, 4)"),
        ("bad_intrinsics", "frame 0 intrinsics shape (2, 2), expected (3, 3)"),
        ("bad_depth", "frame 0 depth shape (2, 3, 4, 5), expected (h, w)"),
        (
            "mismatched_depth",
            "frame 0 depth shape (3, 3) is not a resize of the 96×128 frame "
            "(aspect 1, the frame's 1.33)",
        ),
    ],
)
def test_model_failing_mid_episode_ends_it_incomplete_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, says: str
) -> None:
    code, errors = attach(tmp_path, name, capsys)
    assert code == 2
    assert len(errors) == 1 and says in errors[0], errors  # once, not once per frame
    assert "python:" in errors[0] and "object at 0x" not in errors[0]
    doc = scores(tmp_path)
    assert doc["complete"] is False  # written, and marked: never passed as fine


def test_depth_at_another_size_with_the_frames_aspect_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, errors = attach(tmp_path, "quarter_depth", capsys)
    assert code == 0 and errors == []
    assert scores(tmp_path)["complete"] is True


def test_step_that_never_returns_times_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start = time.perf_counter()
    code, errors = attach(tmp_path, "step_hangs", capsys, "--step-timeout", "1")
    assert time.perf_counter() - start < 60
    assert code == 2 and len(errors) == 1 and "no answer after 1 s" in errors[0]
    doc = scores(tmp_path)
    assert doc["complete"] is False and doc["frames"] == 20


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--fps", "0"),
        ("--fps", "-1"),
        ("--fps", "nan"),
        ("--fps", "inf"),
        ("--fps", "1e9"),
        ("--seconds-per-key", "0"),
        ("--seconds-per-key", "-5"),
        ("--seconds-per-key", "nan"),
        ("--step-timeout", "0"),
        ("--step-timeout", "inf"),
    ],
)
def test_bad_numeric_flags_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["attach", "python:tests.inputs.models:good", "--out", str(tmp_path), flag, value])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1 and flag in err, err

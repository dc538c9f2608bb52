"""The JSON-lines case manifest (``streameval/cases/manifest.py``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from streameval.cases import load_cases
from streameval.errors import BadInputError
from tests.cases.arena_synth import scene, write_image


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    write_image(tmp_path / "img" / "street.jpg", scene(7, 120, 90))
    write_image(tmp_path / "loop.png", scene(8, 64, 48))
    return tmp_path


def write_manifest(folder: Path, *lines: Any, name: str = "cases.jsonl") -> Path:
    path = folder / name
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_one_case_a_line_with_comments_and_blank_lines(folder: Path) -> None:
    path = write_manifest(
        folder,
        "# WorldMark-style cases of one image, and a memory loop",
        {
            "case": "000_006",
            "set": "first_view/real",
            "image": "img/street.jpg",
            "prompt": "First-person view. A street.",
            "intrinsics": [100, 100, 59.5, 44.5],
            "actions": 6,
        },
        "",
        {"case": "000_001", "set": "first_view/real", "image": "img/street.jpg", "actions": "w"},
        {"case": "adhoc", "image": "img/street.jpg", "actions": "WWAD"},
        "   ",
        {"case": "loop", "suite": "memory_loop", "image": "loop.png", "trajectory": "dolly_loop"},
        {"case": "tokens", "suite": "memory_loop", "trajectory": ["pan_left", "pan_right"]},
        {"case": "default", "suite": "memory_loop", "prompt": "no image: the server decides"},
    )
    cases = load_cases(path)
    assert cases.kind == "manifest" and cases.source == path
    assert cases.sets == ("first_view/real", "worldmark", "memory_loop")
    first = cases.cases[0]
    assert (first.name, first.action, first.keys, first.image_id) == (
        "000_006",
        6,
        "WS",
        "img/street.jpg",
    )
    assert first.image_path == folder / "img" / "street.jpg"
    assert first.intrinsics == (100.0, 100.0, 59.5, 44.5)
    assert first.record() == {
        "name": "000_006", "set": "first_view/real", "image": "img/street.jpg", "action": 6,
        "keys": "WS",
        "image_sha256": hashlib.sha256((folder / "img" / "street.jpg").read_bytes()).hexdigest(),
        "prompt_sha256": hashlib.sha256(b"First-person view. A street.").hexdigest(),
        "intrinsics": [100.0, 100.0, 59.5, 44.5], "image_size": [120, 90],
    }  # fmt: skip
    assert (cases.cases[1].action, cases.cases[1].keys) == (1, "W")  # keys name the action
    assert (cases.cases[2].action, cases.cases[2].keys) == (None, "WWAD")  # no WorldMark id
    loop = cases.cases[3]
    assert (loop.suite, loop.trajectory, loop.keys) == ("memory_loop", "dolly_loop", "WWWWSSSS")
    assert loop.image_mime == "image/png" and loop.image_size == (64, 48)
    assert loop.record()["trajectory"] == "dolly_loop"
    assert cases.cases[4].record()["trajectory"] == ["pan_left", "pan_right"]
    assert cases.cases[4].keys == "LR"
    bare = cases.cases[5]
    assert (bare.image_path, bare.image_sha256, bare.keys, bare.trajectory) == (
        None,
        None,
        None,
        None,
    )
    assert bare.record()["image"] is None


def test_a_caption_may_hold_a_line_separator(folder: Path) -> None:
    line = json.dumps({"case": "a", "prompt": "one\u2028two", "actions": 1}, ensure_ascii=False)
    assert "\u2028" in line
    (case,) = load_cases(write_manifest(folder, line)).cases
    assert case.prompt == "one\u2028two"


def test_the_same_name_in_two_sets_is_two_cases(folder: Path) -> None:
    path = write_manifest(
        folder, {"case": "a", "set": "x", "actions": 1}, {"case": "a", "set": "y", "actions": 1}
    )
    assert [c.key for c in load_cases(path)] == ["x/a", "y/a"]


A = {"case": "a", "actions": 1}
IMG = {**A, "image": "img/street.jpg"}
NOT_A_NAME = "must be 1-100 letters, digits or . _ - + = @ , (starting with a letter or digit)"
BAD_LINES: list[tuple[str, Any, str]] = [
    ("not json", '{"case": "a", ',
     "not valid JSON (Expecting property name enclosed in double quotes at line 1)"),
    ("not an object", [1, 2], "expected a JSON object, got list"),
    ("a string", '"000_001"', "expected a JSON object, got str"),
    ("missing image", {"case": "a", "image": "img/nope.jpg", "actions": 1},
     "image 'img/nope.jpg' is missing (looked for {folder}/img/nope.jpg)"),
    ("image a newline", {**A, "image": "\n"},
     "image '\\n' is missing (looked for '{folder}/\\n')"),
    ("image a folder", {**A, "image": "img"}, "image 'img' is not a regular file"),
    ("image a number", {"case": "a", "image": 3, "actions": 1}, "image must be a path, not int"),
    ("unknown field", {"case": "a", "imgae": "x.jpg", "actions": 1},
     "unknown field 'imgae' (fields: case, set, suite, image, prompt, intrinsics, actions, "
     "trajectory); did you mean 'image'?"),
    ("no case", {"image": "img/street.jpg", "actions": 1}, 'no "case" field (the case\'s name)'),
    ("case a number", {"case": 1, "actions": 1}, "case must be a string, not int"),
    ("case a path", {**A, "case": "../x"}, f"case '../x' {NOT_A_NAME}"),
    ("set with a dot level", {**A, "set": "a/../b"}, f"each level of set '..' {NOT_A_NAME}"),
    ("prompt a list", {**A, "prompt": ["x"]}, "prompt must be a string, not list"),
    ("intrinsics short", {**IMG, "intrinsics": [1, 2, 3]},
     "intrinsics of shape (3,), expected (4,) [fx, fy, cx, cy]"),
    ("intrinsics text", {**IMG, "intrinsics": [1, 2, "3", 4]},
     "intrinsics hold '3', not a number"),
    ("intrinsics a dict", {**IMG, "intrinsics": {"fx": 1}},
     "intrinsics {{'fx': 1}} are not [fx, fy, cx, cy]"),
    ("intrinsics no image", {"case": "a", "intrinsics": [1, 1, 0, 0], "actions": 1},
     "intrinsics without an image (they are in its pixels)"),
    ("intrinsics NaN", json.dumps({**IMG, "intrinsics": [float("nan"), 1, 2, 3]}),
     "NaN is not a JSON number (only finite numbers are allowed)"),
    ("action 16", {"case": "a", "actions": 16}, "action 16 is outside 1-15"),
    ("action true", {"case": "a", "actions": True},
     'actions must be an action id 1-15 or keys like "WS", not bool'),
    ("actions bad keys", {"case": "a", "actions": "WX"},
     "actions 'WX' must be 1-64 of the keys W S A D L R"),
    ("no actions", {"case": "a"}, 'no "actions" (an action id 1-15 or keys like "WS")'),
    ("unknown suite", {"case": "a", "suite": "memoryloop", "actions": 1},
     "suite 'memoryloop' is not one of worldmark, memory_loop; did you mean 'memory_loop'?"),
    ("trajectory on worldmark", {"case": "a", "actions": 1, "trajectory": "dolly_loop"},
     "trajectory is for memory_loop cases; a worldmark case takes actions"),
    ("actions on a loop", {"case": "a", "suite": "memory_loop", "actions": 1},
     "actions are for worldmark cases; a memory_loop case takes a trajectory"),
    ("unknown trajectory", {"case": "a", "suite": "memory_loop", "trajectory": "doly_loop"},
     "unknown trajectory 'doly_loop' (known: yaw_loop_360, yaw_loop_180, dolly_loop, "
     "palindrome_loop, double_yaw_loop, square_loop); did you mean 'dolly_loop'?"),
    ("bad token", {"case": "a", "suite": "memory_loop", "trajectory": ["pan_up"]},
     "trajectory token 'pan_up' is not one of push_in, pull_out, pan_right, pan_left"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("line", "problem"), [b[1:] for b in BAD_LINES], ids=[b[0] for b in BAD_LINES]
)
def test_each_bad_line_is_one_line_naming_the_manifest_line(
    folder: Path, line: Any, problem: str
) -> None:
    path = write_manifest(folder, "# first a good case", {"case": "ok", "actions": 1}, line)
    with pytest.raises(BadInputError) as err:
        load_cases(path)
    assert str(err.value) == f"{path}:3: {problem.format(folder=folder)}"


def test_a_case_twice_in_its_set(folder: Path) -> None:
    path = write_manifest(folder, {"case": "a", "actions": 1}, "", {"case": "a", "actions": 2})
    with pytest.raises(BadInputError) as err:
        load_cases(path)
    assert str(err.value) == f"{path}:3: case 'a' of set 'worldmark' again (first on line 1)"


def test_an_empty_manifest_and_an_unreadable_image(folder: Path) -> None:
    path = write_manifest(folder, "# nothing yet", "")
    with pytest.raises(BadInputError) as err:
        load_cases(path)
    assert str(err.value) == f"{path}: no cases (a manifest holds one JSON object a line)"
    (folder / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 30)
    path = write_manifest(folder, {"case": "a", "image": "broken.png", "actions": 1})
    with pytest.raises(BadInputError) as err:
        load_cases(path)
    assert (
        str(err.value)
        == f"{folder / 'broken.png'}: unreadable image/png (no image size in its header)"
    )

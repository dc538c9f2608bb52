"""WorldMark's ``arena_inputs/`` layout read as published (``streameval/cases/arena.py``)."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from streameval.cases import index_cases, load_cases
from streameval.cases.model import text_sha256
from streameval.errors import BadInputError
from tests.cases.arena_synth import CASES_PER_SET, SETS, caption, intrinsics, write_arena


def test_every_image_and_action_is_one_case_named_as_worldmark_names_its_video(
    arena: Path,
) -> None:
    cases = load_cases(arena)
    assert cases.kind == "arena_inputs" and cases.source == arena
    assert cases.sets == ("first_view/real", "third_view/style")
    assert [c.name for c in cases.in_set("first_view/real")] == [
        "000_001", "000_006", "000_009", "001_002", "001_005", "002_011", "002_015",
    ]  # fmt: skip
    assert len(cases) == sum(CASES_PER_SET.values())
    case = cases.by_key()["first_view/real/000_006"]
    assert (case.set, case.image_id, case.image_index, case.action) == (
        "first_view/real",
        "000",
        0,
        6,
    )
    assert (case.keys, case.suite) == ("WS", "worldmark")
    assert case.image_path == arena / "first_view" / "real" / "000.jpg"
    assert case.prompt == caption("first_view/real", 0)
    assert case.intrinsics == tuple(float(v) for v in intrinsics(160, 120, 0))
    assert case.image_size == (160, 120) and case.image_mime == "image/jpeg"
    style = cases.by_key()["third_view/style/002_014"]
    assert (style.keys, style.image_mime, style.image_size) == ("ADA", "image/png", (96, 96))
    assert style.prompt is not None and style.prompt.startswith("Third-person view.")


def test_the_case_record_names_the_case_and_fingerprints_its_inputs(arena: Path) -> None:
    case = load_cases(arena).by_key()["first_view/real/001_005"]
    image_bytes = (arena / "first_view" / "real" / "001.jpg").read_bytes()
    prompt = caption("first_view/real", 1)
    assert case.record() == {
        "name": "001_005",
        "set": "first_view/real",
        "image": "001",
        "action": 5,
        "keys": "R",
        "image_sha256": hashlib.sha256(image_bytes).hexdigest(),
        "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest(),
        # the camera the geometry uses (docs/methods.md#known-intrinsics)
        "intrinsics": list(case.intrinsics or ()),
        "image_size": list(case.image_size or ()),
    }
    assert case.intrinsics is not None and case.image_size is not None
    assert case.prompt_sha256 == text_sha256(prompt)


def test_a_checkout_is_read_through_its_arena_inputs_folder(tmp_path: Path) -> None:
    write_arena(tmp_path / "WorldMark" / "arena_inputs")
    cases = load_cases(tmp_path / "WorldMark")
    assert cases.source == tmp_path / "WorldMark" / "arena_inputs" and len(cases) == 13


def test_any_number_of_images_and_no_intrinsics_folder(arena: Path) -> None:
    shutil.rmtree(arena / "first_view" / "real_intrinsics")
    view = arena / "first_view"
    shutil.copy(view / "real" / "000.jpg", view / "real" / "003.jpg")
    (view / "real_action.txt").write_text("1, 6, 9\n2, 5\n11, 15\n4\n\n")
    (view / "prompt_real.txt").write_text("a\r\nb\r\nc\r\nd\r\n")
    cases = load_cases(arena)
    real = cases.in_set("first_view/real")
    assert [c.name for c in real][-1] == "003_004" and len(real) == 8
    assert all(c.intrinsics is None for c in real)
    assert [c.prompt for c in real][-1] == "d"
    assert real[0].image_sha256 == real[-1].image_sha256  # the same bytes, the same print


def test_no_action_protocol_file_is_fine(tmp_path: Path) -> None:
    assert len(load_cases(write_arena(tmp_path / "a", protocol=False))) == 13


def test_index_cases_reads_the_text_files_only(arena: Path) -> None:
    (arena / "first_view" / "real" / "002.jpg").write_bytes(b"not an image")
    cases = index_cases(arena)
    assert len(cases) == 13 and all(c.image_sha256 is None for c in cases)


def _write(rel: str, text: str) -> Callable[[Path], Path]:
    def damage(root: Path) -> Path:
        (root / rel).write_text(text)
        return root / rel

    return damage


def _remove(rel: str) -> Callable[[Path], Path]:
    def damage(root: Path) -> Path:
        path = root / rel
        shutil.rmtree(path) if path.is_dir() else path.unlink()
        return path

    return damage


def _empty(rel: str) -> Callable[[Path], Path]:
    def damage(root: Path) -> Path:
        shutil.rmtree(root / rel)
        (root / rel).mkdir()
        return root / rel

    return damage


def _npy(rel: str, value: object) -> Callable[[Path], Path]:
    def damage(root: Path) -> Path:
        np.save(root / rel, np.asarray(value))
        return root / rel

    return damage


def _truncate(rel: str) -> Callable[[Path], Path]:
    def damage(root: Path) -> Path:
        data = (root / rel).read_bytes()
        (root / rel).write_bytes(data[: len(data) // 2])
        return root / rel

    return damage


REAL = "first_view/real"
BAD_FOLDERS: list[tuple[str, Callable[[Path], Path], str]] = [
    ("missing image", _remove(f"{REAL}/001.jpg"),
     "missing image (images run to 002; row i of the action and caption files is image i)"),
    ("unreadable image", _write(f"{REAL}/001.jpg", "GIF89a..."), "not a JPEG or PNG image"),
    ("truncated image", _truncate(f"{REAL}/000.jpg"),
     "truncated JPEG (no end-of-image marker after its last scan)"),
    ("image a folder", lambda r: (_remove(f"{REAL}/002.jpg")(r).mkdir(), r / REAL / "002.jpg")[1],
     "a directory"),
    ("not an image name", _write(f"{REAL}/003.gif", "GIF89a"),
     "not an image name (expected .jpg, .jpeg, .png)"),
    ("two images one number", lambda r: _write(f"{REAL}/001.png", "x")(r),
     "a second image numbered 001 (also 001.jpg)"),
    ("no images", _empty("third_view/style"),
     "no images (expected 000.jpg, 001.jpg, ... for set third_view/style)"),
    ("fewer captions", _write("first_view/prompt_real.txt", "one\ntwo\n"),
     "2 caption rows for 3 images (fewer rows than images)"),
    ("more captions", _write("first_view/prompt_real.txt", "1\n2\n3\n4"),
     "4 caption rows for 3 images (more rows than images)"),
    ("empty caption row", _write("first_view/prompt_real.txt", "one\n\nthree\n"),
     "row 2 (image 001) is empty"),
    ("no caption file", _remove("first_view/prompt_real.txt"), "missing"),
    ("fewer action rows", _write("first_view/real_action.txt", "1\n2\n"),
     "2 action rows for 3 images (fewer rows than images)"),
    ("action over 15", _write("first_view/real_action.txt", "1, 6\n2, 16\n3"),
     "row 2 (image 001): action 16 is outside 1-15"),
    ("action 0", _write("first_view/real_action.txt", "0\n2\n3"),
     "row 1 (image 000): action 0 is outside 1-15"),
    ("action not a number", _write("first_view/real_action.txt", "1\n2\nW, 3"),
     "row 3 (image 002): 'W' is not an action id (1-15)"),
    ("negative action", _write("first_view/real_action.txt", "1\n-2\n3"),
     "row 2 (image 001): '-2' is not an action id (1-15)"),
    ("action twice", _write("first_view/real_action.txt", "1, 1\n2\n3"),
     "row 1 (image 000): action 1 twice"),
    ("empty action row", _write("first_view/real_action.txt", "1\n \n3"),
     "row 2 (image 001) is empty"),
    ("intrinsics 3x3", _npy(f"{REAL}_intrinsics/001_intrinsics.npy", np.eye(3)),
     "intrinsics of shape (3, 3), expected (4,) [fx, fy, cx, cy]"),
    ("intrinsics nan", _npy(f"{REAL}_intrinsics/001_intrinsics.npy", [500, np.nan, 80, 60]),
     "intrinsics hold nan, not a finite number"),
    ("intrinsics inf", _npy(f"{REAL}_intrinsics/001_intrinsics.npy", np.float32([np.inf, 1, 2, 3])),
     "intrinsics hold inf, not a finite number"),
    ("intrinsics zero focal", _npy(f"{REAL}_intrinsics/000_intrinsics.npy", [0.0, 500, 80, 60]),
     "intrinsics focal lengths fx=0, fy=500 must be > 0"),
    ("intrinsics missing", _remove(f"{REAL}_intrinsics/002_intrinsics.npy"),
     "missing: the intrinsics of real/002.jpg"),
    ("intrinsics not npy", _write(f"{REAL}_intrinsics/000_intrinsics.npy", "[1, 2, 3, 4]"),
     "holds Python objects (pickled data is never loaded)"),  # np.load's reading of text
    ("action file missing", _remove("third_view/style_action.txt"),
     "missing: the actions of the images in third_view/style/"),
    ("protocol of another revision",
     _write("action_protocol.txt", " 1: W (forward)\n 5: L (turn left)\n"),
     "action 5 is 'L' here, 'R' in the WorldMark protocol streameval drives: "
     "these inputs are of another revision"),
    ("protocol with a 16th action", _write("action_protocol.txt", "16: WW\n"),
     "action 16 is 'WW' here, no action in the WorldMark protocol streameval drives: "
     "these inputs are of another revision"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("damage", "problem"), [b[1:] for b in BAD_FOLDERS], ids=[b[0] for b in BAD_FOLDERS]
)
def test_each_bad_folder_is_one_line_naming_the_file(
    arena: Path, damage: Callable[[Path], Path], problem: str
) -> None:
    path = damage(arena)
    with pytest.raises(BadInputError) as err:
        load_cases(arena)
    assert err.value.source == str(path)
    line = str(err.value)
    assert "\n" not in line
    assert line == f"{path}: {problem}", line


def test_a_folder_that_is_not_a_case_set(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInputError, match=r"empty: no case sets: expected WorldMark's"):
        load_cases(tmp_path / "empty")
    with pytest.raises(BadInputError, match=r"nowhere: missing: expected an arena_inputs folder"):
        load_cases(tmp_path / "nowhere")
    (tmp_path / "cases.txt").write_text("{}")
    with pytest.raises(BadInputError, match=r"cases.txt: not a case set"):
        load_cases(tmp_path / "cases.txt")


def test_sets_agree_with_the_published_example_rows(tmp_path: Path) -> None:
    # WorldMark's rows are "1, 6, 9, 11, 13" with no final newline: five cases from one row
    root = write_arena(tmp_path / "a")
    (root / "first_view" / "real_action.txt").write_text("1, 6, 9, 11, 13\n2 5 7 10 12\n2,3,4,7,8")
    real = load_cases(root).in_set("first_view/real")
    assert [c.action for c in real] == [1, 6, 9, 11, 13, 2, 5, 7, 10, 12, 2, 3, 4, 7, 8]
    assert [c.keys for c in real][:5] == ["W", "WS", "WR", "WSW", "WRW"]
    assert set(SETS) == set(load_cases(root).sets)

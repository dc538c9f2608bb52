"""Property-based fuzzing of benchmark cases (``streameval/cases``): an ``arena_inputs`` folder
damaged at random (malformed rows, odd and broken images, huge captions, bad intrinsics),
random manifest lines, random selections and odd images. Reading them either gives cases
that meet the rules or raises one ``BadInputError`` line naming the input, never another
exception."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streameval.protocol.suites import WORLDMARK

from streameval.cases import first_frame_similarity, index_cases, load_cases, select_cases
from streameval.cases.images import decode_image
from streameval.errors import BadInputError
from tests.cases.arena_synth import intrinsics, scene, write_arena, write_image
from tests.fuzz.conftest import CASES_PER_TEST, FUZZ, bounded, only_bad_input
from tests.fuzz.strategies import (
    JSON_VALUES,
    NASTY_NUMBERS,
    NASTY_STRINGS,
    SCALARS,
    array_file,
    dumps,
    mangled_text,
)
from tests.fuzz.test_fuzz_cli import run_cli

ROWS = ["1, 6, 9", "2, 5", "11, 15"]
TOKENS = ["1", "6", "15", "16", "0", "-1", "x", "1.5", "", " ", ",", "١", "99999999999", "W"]


@pytest.fixture(scope="module")
def arena() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield write_arena(Path(tmp) / "arena_inputs")


def encoded(pixels: np.ndarray, ext: str) -> bytes:
    ok, data = cv2.imencode(ext, pixels)
    return data.tobytes() if ok else b""


@st.composite
def odd_image_bytes(draw: st.DrawFn) -> bytes:
    """A JPEG or PNG of an odd shape, depth or channel count, possibly damaged."""
    h, w = draw(st.sampled_from([(1, 1), (1, 3000), (3000, 2), (2, 2), (17, 31), (5, 1)]))
    channels = draw(st.sampled_from([None, 3, 4]))
    dtype = draw(st.sampled_from([np.uint8, np.uint16]))
    shape = (h, w) if channels is None else (h, w, channels)
    pixels = np.random.default_rng(draw(st.integers(0, 99))).integers(0, 255, shape).astype(dtype)
    data = encoded(pixels, draw(st.sampled_from([".png", ".jpg"])))
    kind = draw(st.sampled_from(["keep", "cut", "flip", "junk", "append", "empty", "huge"]))
    if kind == "empty":
        return b""
    if kind == "huge":  # a real PNG whose header claims a huge size (never decoded)
        png = encoded(np.zeros((2, 2, 3), np.uint8), ".png")
        side = draw(st.sampled_from([20_000, 70_000, 2**31 - 1]))
        return png[:16] + side.to_bytes(4, "big") + side.to_bytes(4, "big") + png[24:]
    if kind == "cut" and data:
        return data[: draw(st.integers(0, len(data) - 1))]
    if kind == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]
    if kind == "junk":
        return draw(st.binary(max_size=300))
    if kind == "append":
        return data + draw(st.binary(max_size=50))
    return data


def _rows_text(draw: st.DrawFn) -> str:
    rows = draw(st.lists(st.lists(st.sampled_from(TOKENS), max_size=6), max_size=5))
    sep = draw(st.sampled_from([", ", " ", ",", "\t"]))
    return draw(st.sampled_from(["\n", "\r\n"])).join(sep.join(r) for r in rows)


@st.composite
def folder_damage(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """One to three changes to the test folder: (what, payload)."""
    changes: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 3))):
        what = draw(st.sampled_from(
            ["actions", "prompts", "huge caption", "intrinsics", "image", "remove", "folder",
             "protocol"]
        ))  # fmt: skip
        if what == "actions":
            text = draw(st.one_of(mangled_text("\n".join(ROWS)), st.builds(lambda: "")))
            changes.append((what, text if draw(st.booleans()) else _rows_text(draw)))
        elif what == "prompts":
            changes.append((what, draw(mangled_text("one\ntwo\nthree\n"))))
        elif what == "huge caption":
            changes.append((what, draw(st.sampled_from([10_000, 1_000_000, 17_000_000]))))
        elif what == "intrinsics":
            good = intrinsics(160, 120, 0)
            changes.append((what, (draw(st.integers(0, 2)), draw(array_file(good)))))
        elif what == "image":
            changes.append((what, (draw(st.integers(0, 3)), draw(odd_image_bytes()))))
        else:
            rel = draw(st.sampled_from([
                "first_view/real/001.jpg", "first_view/real_action.txt",
                "first_view/prompt_real.txt",
                "first_view/real_intrinsics/002_intrinsics.npy", "third_view/style",
                "first_view/real_intrinsics", "action_protocol.txt",
            ]))  # fmt: skip
            changes.append((what, rel if what != "protocol" else draw(mangled_text(" 5: R\n"))))
    return changes


def _put(path: Path, data: bytes | str) -> None:
    """Write ``data`` at ``path``, whatever an earlier change left there."""
    if path.is_dir():
        shutil.rmtree(path)
    if any(parent.is_file() for parent in path.parents):
        return  # an earlier change turned the folder into a file
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    path.write_bytes(raw)


def _apply(root: Path, what: str, payload: Any) -> None:
    view = root / "first_view"
    if what == "actions":
        _put(view / "real_action.txt", payload)
    elif what == "prompts":
        _put(view / "prompt_real.txt", payload)
    elif what == "huge caption":
        _put(view / "prompt_real.txt", "a\n" + "b" * payload + "\nc\n")
    elif what == "intrinsics":
        index, data = payload
        _put(view / "real_intrinsics" / f"{index:03d}_intrinsics.npy", data)
    elif what == "image":
        index, data = payload
        _put(view / "real" / f"{index:03d}.jpg", data)
    elif what == "protocol":
        _put(root / "action_protocol.txt", payload)
    else:
        path = root / payload
        if path.is_dir():
            shutil.rmtree(path)
            if what == "folder":
                path.write_text("now a file")
        elif path.exists():
            path.unlink()
            if what == "folder":
                path.mkdir()


NAME = re.compile(r"\d{3}_\d{3}")


def _check_cases(cases: Any) -> None:
    assert len(cases) > 0
    assert len({c.key for c in cases}) == len(cases)
    for case in cases:
        assert case.keys in WORLDMARK.values() and NAME.fullmatch(case.name)
        assert case.image_sha256 and case.image_size and case.prompt
        assert case.intrinsics is None or all(np.isfinite(case.intrinsics))
        case.record()


@FUZZ
@given(damage=folder_damage())
def test_fuzz_arena_folder(arena: Path, damage: list[tuple[str, Any]]) -> None:
    with bounded(), tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "arena_inputs"
        shutil.copytree(arena, root)
        for what, payload in damage:
            _apply(root, what, payload)
        cases = only_bad_input(lambda: load_cases(root))
        if cases is not None:
            _check_cases(cases)


GOOD = {"case": "a", "image": "img.jpg", "prompt": "p", "intrinsics": [9, 9, 4, 3], "actions": 6}
FIELD_VALUES = {
    "case": st.one_of(st.just("000_001"), NASTY_STRINGS, SCALARS),
    "set": st.one_of(st.just("first_view/real"), NASTY_STRINGS, SCALARS),
    "suite": st.one_of(st.sampled_from(["worldmark", "memory_loop"]), NASTY_STRINGS, SCALARS),
    "image": st.one_of(st.sampled_from(["img.jpg", "bad.jpg", "sub", "../img.jpg"]),
                       NASTY_STRINGS, SCALARS),
    "prompt": st.one_of(st.text(max_size=30), SCALARS),
    "intrinsics": st.one_of(st.lists(st.one_of(NASTY_NUMBERS, SCALARS), max_size=5), JSON_VALUES),
    "actions": st.one_of(st.integers(-2, 17), st.text("WSADLRX", max_size=6), SCALARS),
    "trajectory": st.one_of(st.sampled_from(["dolly_loop", "x"]),
                            st.lists(st.sampled_from(["pan_left", "push_in", "up"])), JSON_VALUES),
    "extra": JSON_VALUES,
}  # fmt: skip


@st.composite
def manifest_line(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["fields", "fields", "mangled", "comment", "any"]))
    if kind == "comment":
        return draw(st.sampled_from(["", "   ", "# a comment", "#", "\t"]))
    if kind == "any":
        return dumps(draw(JSON_VALUES))
    doc = dict(GOOD)
    for field in draw(st.lists(st.sampled_from(list(FIELD_VALUES)), max_size=3)):
        doc[field] = draw(FIELD_VALUES[field])
    for field in draw(st.lists(st.sampled_from(list(GOOD)), max_size=2)):
        doc.pop(field, None)
    line = dumps(doc)
    return draw(mangled_text(line)).replace("\n", " ") if kind == "mangled" else line


@pytest.fixture(scope="module")
def manifest_folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_image(root / "img.jpg", scene(1, 24, 18))
        (root / "bad.jpg").write_bytes(b"\xff\xd8\xff\xe0 broken")
        (root / "sub").mkdir()
        yield root


@FUZZ
@given(lines=st.lists(manifest_line(), min_size=1, max_size=4))
def test_fuzz_manifest_lines(manifest_folder: Path, lines: list[str]) -> None:
    with bounded(), tempfile.NamedTemporaryFile(
        "w", suffix=".jsonl", dir=manifest_folder, delete=False, encoding="utf-8",
        errors="surrogatepass",
    ) as f:  # fmt: skip
        f.write("\n".join(lines))
    path = Path(f.name)
    try:
        with bounded():
            cases = only_bad_input(lambda: load_cases(path))
            if cases is not None:
                assert len({c.key for c in cases}) == len(cases) > 0
                for case in cases:
                    assert (case.image_path is None) == (case.image_sha256 is None)
                    case.record()
    finally:
        path.unlink()


SELECTION_TEXT = st.one_of(
    st.none(), st.text("0123456789-, /_abcdefirstviewrealthdyl", max_size=20), NASTY_STRINGS
)


@FUZZ
@given(sets=SELECTION_TEXT, images=SELECTION_TEXT, actions=SELECTION_TEXT)
def test_fuzz_selection(
    arena: Path, sets: str | None, images: str | None, actions: str | None
) -> None:
    every = index_cases(arena)
    with bounded():
        chosen = only_bad_input(
            lambda: select_cases(every, sets=sets, images=images, actions=actions)
        )
        if chosen is not None:
            assert 0 < len(chosen) <= len(every)
            assert set(chosen.cases) <= set(every.cases)


@FUZZ
@given(image=odd_image_bytes(), frame=odd_image_bytes())
def test_fuzz_odd_images(image: bytes, frame: bytes) -> None:
    with bounded():
        pixels = only_bad_input(lambda: decode_image(image, "image.bin"))
        seen = only_bad_input(lambda: decode_image(frame, "frame.bin"))
        if pixels is None or seen is None:
            return  # refused with one line: the property held (no assume: most are refused)
        assert pixels.dtype == np.uint8 and pixels.ndim == 3 and pixels.shape[2] == 3
        assert 0.0 <= first_frame_similarity(pixels, seen) <= 1.0


@st.composite
def case_source(draw: st.DrawFn) -> tuple[str, Any]:
    """A damaged ``arena_inputs`` folder or a manifest of random lines."""
    if draw(st.booleans()):
        return "folder", draw(folder_damage())
    return "manifest", draw(st.lists(manifest_line(), min_size=1, max_size=3))


NO_MODEL = "python:tests.inputs.models:factory_exits"
"""A factory that exits: the cases are read and checked before the model is built, so a
case set the command line accepts ends on this factory's line, never an episode."""


@settings(FUZZ, max_examples=max(10, CASES_PER_TEST // 4))
@given(
    source=case_source(),
    selection=st.sampled_from(
        [[], ["--sets", "first_view/real"], ["--images", "0-1"], ["--actions", "1,6"]]
    ),
)
def test_fuzz_cases_on_the_command_line(
    arena: Path, manifest_folder: Path, source: tuple[str, Any], selection: list[str]
) -> None:
    """``attach --cases``: a bad case input is the same one line ``load_cases`` raises,
    printed by the command line, exit 2, before any model is built or anything written."""
    kind, payload = source
    with bounded(), tempfile.TemporaryDirectory() as tmp:
        if kind == "folder":
            path = Path(tmp) / "arena_inputs"
            shutil.copytree(arena, path)
            for what, change in payload:
                _apply(path, what, change)
        else:
            path = manifest_folder / f"fuzz-{Path(tmp).name}.jsonl"
            path.write_text("\n".join(payload), encoding="utf-8", errors="surrogatepass")
        out = Path(tmp) / "out"
        try:
            args = ["attach", NO_MODEL, "--cases", str(path), "--out", str(out), "--no-tui"]
            code, _, err = run_cli([*args, *selection])
            direct: Any = None
            try:
                sel = dict(zip(selection[::2], selection[1::2], strict=True))
                load_cases(path, sets=sel.get("--sets"), images=sel.get("--images"),
                           actions=sel.get("--actions"))  # fmt: skip
            except BadInputError as exc:
                direct = exc
            assert not out.exists() or not any(out.iterdir())  # nothing written
        finally:
            if kind == "manifest":
                path.unlink()
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    if direct is not None:
        assert lines[0] == f"error: {direct}"
    else:
        assert "factory_exits() raised SystemExit" in lines[0], lines[0]

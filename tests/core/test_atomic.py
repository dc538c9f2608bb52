"""Atomic whole-file writes: the target is the old file or the new one, never half of either,
and the temporary file never outlives a write that returned or raised."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from streameval.core.atomic import (
    replace_atomically,
    replace_folder_atomically,
    savez_atomic,
    temp_path,
    write_bytes_atomic,
    write_json_atomic,
    write_text_atomic,
)


def test_temp_names_are_the_ones_cleaners_know(tmp_path: Path) -> None:
    # results cleaners and the recorder's reset remove exactly these names
    assert temp_path(tmp_path / "scores.json").name == "scores.json.tmp"
    assert temp_path(tmp_path / "meta.json").name == "meta.json.tmp"
    assert temp_path(tmp_path / "signals.npz").name == "signals.tmp.npz"


def test_each_writer_writes_and_leaves_no_temp_file(tmp_path: Path) -> None:
    write_bytes_atomic(tmp_path / "a.bin", b"\x00\x01")
    write_text_atomic(tmp_path / "b.txt", "é\n")
    write_json_atomic(tmp_path / "c.json", {"x": [1, 2.5]})
    savez_atomic(tmp_path / "d.npz", {"v": np.arange(3)})
    assert (tmp_path / "a.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "b.txt").read_text(encoding="utf-8") == "é\n"
    assert (tmp_path / "c.json").read_text() == json.dumps({"x": [1, 2.5]}, indent=2) + "\n"
    with np.load(tmp_path / "d.npz") as z:
        assert z["v"].tolist() == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "b.txt", "c.json", "d.npz"]


def test_a_failure_mid_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "scores.json"
    target.write_text("old\n")

    def half_then_fail(tmp: Path) -> None:
        tmp.write_text("half of the new fi")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        replace_atomically(target, half_then_fail)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["scores.json"]


def test_an_interrupt_mid_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "signals.npz"
    savez_atomic(target, {"v": np.zeros(2)})

    def interrupted(tmp: Path) -> None:
        np.savez(tmp, v=np.ones(2))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        replace_atomically(target, interrupted)
    with np.load(target) as z:
        assert z["v"].tolist() == [0.0, 0.0]
    assert [p.name for p in tmp_path.iterdir()] == ["signals.npz"]


def test_refused_json_touches_no_file(tmp_path: Path) -> None:
    target = tmp_path / "quality.json"
    target.write_text("{}\n")
    with pytest.raises(ValueError, match="JSON compliant"):
        write_json_atomic(target, {"x": math.nan})
    assert target.read_text() == "{}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["quality.json"]
    write_json_atomic(target, {"x": math.nan}, allow_nan=True)  # the recorder's meta.json
    assert json.loads(target.read_text())["x"] != json.loads(target.read_text())["x"]


def test_a_named_temp_file_is_used_and_removed(tmp_path: Path) -> None:
    target = tmp_path / "results.jsonl"
    mine = tmp_path / "results.jsonl.123.tmp"
    seen: list[bool] = []

    def write(tmp: Path) -> None:
        seen.append(tmp == mine)
        tmp.write_text("line\n")

    replace_atomically(target, write, mine)
    assert seen == [True]
    assert target.read_text() == "line\n" and not mine.exists()


def test_an_npz_name_must_end_in_npz(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\.npz"):
        savez_atomic(tmp_path / "signals", {"v": np.zeros(1)})


def test_a_folder_is_built_beside_and_moved_in_place(tmp_path: Path) -> None:
    target = tmp_path / "frames"
    target.mkdir()
    (target / "old.png").write_bytes(b"old")

    def build(folder: Path) -> None:
        assert list(folder.iterdir()) == []  # empty, beside the target
        assert folder.parent == tmp_path
        (folder / "new.png").write_bytes(b"new")

    replace_folder_atomically(target, build)
    assert [p.name for p in target.iterdir()] == ["new.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["frames"]


def test_a_failed_folder_build_leaves_the_old_folder_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "frames"
    target.mkdir()
    (target / "old.png").write_bytes(b"old")

    def build(folder: Path) -> None:
        (folder / "half.png").write_bytes(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        replace_folder_atomically(target, build)
    assert [p.name for p in target.iterdir()] == ["old.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["frames"]


def test_keep_existing_keeps_another_processs_folder(tmp_path: Path) -> None:
    target = tmp_path / "model"
    target.mkdir()
    (target / "model.xml").write_text("theirs")
    tmp = tmp_path / ".tmp-model-1"
    replace_folder_atomically(
        target, lambda f: (f / "model.xml").write_text("mine"), tmp=tmp, keep_existing=True
    )
    assert (target / "model.xml").read_text() == "theirs"
    assert not tmp.exists()
    fresh = tmp_path / "fresh"
    replace_folder_atomically(fresh, lambda f: (f / "a").write_text("a"), keep_existing=True)
    assert (fresh / "a").read_text() == "a"

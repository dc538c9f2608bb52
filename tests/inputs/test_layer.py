"""The input layer's own functions against known truth (``streameval/inputs``)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from jsonschema import Draft202012Validator

from streameval.errors import BadInputError
from streameval.inputs.arrays import (
    depth_problem,
    intrinsics_problem,
    pose_problem,
    rotation_problem,
)
from streameval.inputs.jsonfile import MAX_JSON_DEPTH, nesting_depth, parse_json_text
from streameval.inputs.numbers import FPS, NORMALIZED, SCORE_MAGNITUDE
from streameval.inputs.paths import MAX_COMPONENT, path_under, safe_component, safe_relative
from streameval.inputs.schema import META_SCHEMA, SCORES_SCHEMA, load_schema, validate


def _naive_depth(text: str) -> int:
    depth = best = 0
    in_string = escaped = False
    for c in text:
        if in_string:
            escaped, in_string = (not escaped and c == "\\"), in_string and (escaped or c != '"')
            continue
        if c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            best = max(best, depth)
        elif c in "]}":
            depth -= 1
    return best


@pytest.mark.parametrize(
    "value",
    [[], {}, [[[]]], {"a": [{"b": "[[[[{"}]}, ["]]]", ['\\"[', {"x": [1]}]], 5, "s"],
)
def test_nesting_depth_matches_a_naive_scan(value: object) -> None:
    text = json.dumps(value)
    assert nesting_depth(text) == _naive_depth(text)


def test_json_limits() -> None:
    assert parse_json_text("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, "x") is not None
    with pytest.raises(BadInputError, match="nested 65 levels"):
        parse_json_text("[" * 65 + "]" * 65, "x")
    with pytest.raises(BadInputError, match="integer with 21 digits"):
        parse_json_text("1" * 21, "x")
    assert parse_json_text("1" * 20, "x") == int("1" * 20)
    for token in ("NaN", "Infinity", "-Infinity", "1e400"):
        with pytest.raises(BadInputError):
            parse_json_text(f"[{token}]", "x")


def test_ranges_refuse_nan_inf_bools_and_strings() -> None:
    assert FPS.check(16, "x") == 16.0
    for bad in (0, 0.999, 1000.1, float("nan"), float("inf"), True, "16", None):
        with pytest.raises(BadInputError):
            FPS.check(bad, "x")


def _rotation(yaw: float) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def test_rotations_and_poses() -> None:
    assert rotation_problem(_rotation(0.7)) is None
    assert rotation_problem(_rotation(0.7).astype(np.float32).astype(np.float64)) is None
    assert "not orthonormal" in str(rotation_problem(_rotation(0.7) * 1.01))
    assert "reflection" in str(rotation_problem(_rotation(0.7) @ np.diag([1, 1, -1])))
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = _rotation(2.0), (5, -3, 100)
    assert pose_problem(pose) is None
    pose[3, 0] = 0.5
    assert "last row" in str(pose_problem(pose))


def test_pinhole_intrinsics() -> None:
    k = np.array([[500.0, 0.2, 320], [0, 480, 240], [0, 0, 1]])
    assert intrinsics_problem(k) is None  # a little skew is still pinhole
    assert "not pinhole" in str(intrinsics_problem(k * 1.01))
    assert "focal" in str(intrinsics_problem(np.diag([0.0, 1.0, 1.0])))


def test_safe_names_and_paths(tmp_path: Path) -> None:
    assert safe_relative("MODEL/016_014") == Path("MODEL/016_014")
    assert safe_relative("../../x") == Path("x")
    assert safe_relative("/etc/passwd") == Path("etc/passwd")
    assert safe_component("\ud800") == "_" and safe_component("..") == "_"
    long_a, long_b = safe_component("a" * 300), safe_component("a" * 299 + "b")
    assert len(long_a) == MAX_COMPONENT and long_a != long_b
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "link").symlink_to(outside)
    with pytest.raises(BadInputError, match="outside the output folder"):
        path_under(tmp_path / "out", "link/ep")


def test_published_schemas_are_valid_and_used() -> None:
    for name in (META_SCHEMA, SCORES_SCHEMA):
        text = resources.files("streameval.schemas").joinpath(name).read_text(encoding="utf-8")
        assert json.loads(text) == load_schema(name)
        Draft202012Validator.check_schema(load_schema(name))
    validate({"format": "streameval.rollout/1", "fps": 16, "model": "m", "suite": "s"},
             META_SCHEMA, "meta.json")  # fmt: skip
    with pytest.raises(BadInputError, match=r"^meta\.json: fps: 0 is less than the minimum"):
        validate({"format": "streameval.rollout/1", "fps": 0, "model": "m", "suite": "s"},
                 META_SCHEMA, "meta.json")  # fmt: skip


def test_schema_bounds_are_the_layer_ranges() -> None:
    meta = load_schema(META_SCHEMA)["properties"]
    assert (meta["fps"]["minimum"], meta["fps"]["maximum"]) == (FPS.low, FPS.high)
    scores = load_schema(SCORES_SCHEMA)
    assert scores["$defs"]["number"] == {
        "type": "number",
        "minimum": -SCORE_MAGNITUDE,
        "maximum": SCORE_MAGNITUDE,
    }
    normalized = scores["$defs"]["metric"]["properties"]["normalized"]
    assert (normalized["minimum"], normalized["maximum"]) == (NORMALIZED.low, NORMALIZED.high)


@pytest.mark.parametrize(
    ("depth", "frame", "ok"),
    [
        ((96, 128), (96, 128), True),  # the frame's own size
        ((24, 32), (96, 128), True),  # a quarter
        ((36, 62), (144, 250), True),  # 250 // 4: the procedural world's floor
        ((518, 924), (720, 1280), True),  # DPT's multiples of 14, aspect kept
        ((3, 4), (96, 128), True),  # a 32× downsample is still this frame's depth
        ((192, 256), (96, 128), True),  # larger than the frame
        ((3, 3), (96, 128), False),  # an independent fuzzer: scored as if fine
        ((128, 96), (96, 128), False),  # transposed
        ((96, 64), (96, 128), False),
    ],
)
def test_depth_must_be_a_resize_of_its_frame(
    depth: tuple[int, int], frame: tuple[int, int], ok: bool
) -> None:
    why = depth_problem(np.zeros(depth, np.float32), frame)
    assert (why is None) == ok, why
    assert depth_problem(np.zeros(depth, np.float32)) is None  # without a frame: shape only

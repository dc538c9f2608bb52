"""The array types are named once, in ``streameval.core.arrays``: no other module of the
installed package defines its own ``NDArray[...]`` alias for a dtype that module names."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import numpy.typing as npt

from streameval.core import arrays

ROOT = Path(__file__).resolve().parents[2]
SOURCE_FOLDERS = ("streameval", "protocol", "replay", "tui", "examples")
NAMED = {"float64", "float32", "int64", "uint64", "intp", "bool_", "uint8"}
# names whose meaning is more than their dtype, each defined once beside its only producer
SEMANTIC = {"DepthMap", "Embeddings", "FloatImage"}


def dtype_aliases(path: Path) -> list[tuple[str, int]]:
    """(name, line) of the module-level ``X = NDArray[np.<dtype>]`` of a dtype ``arrays``
    names, semantic names left out."""
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript)):
            continue
        target, base, item = node.targets[0], node.value.value, node.value.slice
        base_name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
        name = getattr(target, "id", "")
        if (
            base_name == "NDArray"
            and isinstance(item, ast.Attribute)
            and item.attr in NAMED
            and name not in SEMANTIC
        ):
            found.append((name, node.lineno))
    return found


def test_no_module_redefines_an_array_type() -> None:
    own = Path(arrays.__file__).resolve()
    found = [
        f"{path.relative_to(ROOT)}:{line} {name}"
        for folder in SOURCE_FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.resolve() != own
        for name, line in dtype_aliases(path)
    ]
    assert not found, f"import the type from streameval.core.arrays instead: {found}"


def test_the_walk_finds_a_planted_alias(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import numpy as np\nimport numpy.typing as npt\n"
        "Frame = npt.NDArray[np.uint8]\nDepthMap = npt.NDArray[np.float32]\n"
    )
    assert dtype_aliases(planted) == [("Frame", 3)]


def test_the_types_are_the_dtypes_they_name() -> None:
    named: dict[str, type[np.generic]] = {
        "F64": np.float64,
        "F32": np.float32,
        "I64": np.int64,
        "U64": np.uint64,
        "Indices": np.intp,
        "Mask": np.bool_,
        "Image": np.uint8,
        "Flow": np.float32,
    }
    for name, dtype in named.items():
        assert getattr(arrays, name) == npt.NDArray[dtype], name

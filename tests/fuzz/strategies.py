"""Hypothesis strategies for hostile inputs: JSON values and texts, names, arrays, file bytes."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

# Values a careless or hostile writer puts where a name or a number belongs.
NASTY_STRINGS = st.sampled_from(
    [
        "",
        "../../x",
        "/etc/passwd",
        "..",
        ".",
        "a\x00b",
        "\ud800",
        "x" * 300,
        "MODEL/016_014",
        "\\..\\..\\win",
        "con",
        "é" * 50,
        "\n",
        "-rf",
    ]
)
NASTY_NUMBERS = st.sampled_from(
    [0, -1, 1e308, -1e308, 1e-300, 1e-9, 0.001, 1e9, 10**30, True, False, 16, 24.0, 1000, 1]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**25), max_value=10**25),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    NASTY_STRINGS,
    NASTY_NUMBERS,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def dumps(value: Any) -> str:
    """JSON text of ``value``; NaN and Infinity are written as the stdlib does (not JSON)."""
    return json.dumps(value, allow_nan=True)


@st.composite
def mangled_text(draw: st.DrawFn, base: str) -> str:
    """``base`` damaged the ways files get damaged: cut, spliced, deepened, inflated."""
    kind = draw(st.sampled_from(["keep", "cut", "splice", "deep", "bigint", "junk", "bom"]))
    if kind == "cut":
        return base[: draw(st.integers(0, len(base)))]
    if kind == "splice":
        at = draw(st.integers(0, len(base)))
        return base[:at] + draw(st.text(max_size=10)) + base[at:]
    if kind == "deep":
        depth = draw(st.sampled_from([100, 1000, 5000, 100_000]))
        return "[" * depth + "]" * depth
    if kind == "bigint":
        return '{"fps": ' + "9" * draw(st.sampled_from([25, 4301, 5000, 50_000])) + "}"
    if kind == "junk":
        return draw(st.text(max_size=50))
    if kind == "bom":
        return "\ufeff" + base
    return base


@st.composite
def json_text(draw: st.DrawFn) -> str:
    return draw(mangled_text(dumps(draw(JSON_VALUES))))


ARRAYS = hnp.arrays(
    dtype=st.sampled_from(
        [np.float64, np.float32, np.float16, np.int64, np.uint8, np.bool_, np.complex64, "<U2"]
    ),
    shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6),
)


def npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=True)
    return buf.getvalue()


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


@st.composite
def array_file(draw: st.DrawFn, good: np.ndarray) -> bytes:
    """Bytes for a ``.npy`` sidecar: the good array, a changed one, a random one, a damaged
    file, an archive, a pickle."""
    kind = draw(
        st.sampled_from(["good", "scaled", "nan", "random", "cut", "npz", "pickle", "junk"])
    )
    if kind == "good":
        return npy_bytes(good)
    if kind == "scaled":
        with np.errstate(over="ignore"):
            return npy_bytes(good * draw(st.sampled_from([-1.0, 0.0, 1.001, 1000.0, 1e308])))
    if kind == "nan":
        bad = good.astype(np.float64).copy()
        if bad.size:
            bad.flat[draw(st.integers(0, bad.size - 1))] = draw(
                st.sampled_from([np.nan, np.inf, -np.inf])
            )
        return npy_bytes(bad)
    if kind == "random":
        return npy_bytes(draw(ARRAYS))
    if kind == "cut":
        data = npy_bytes(good)
        return data[: draw(st.integers(0, len(data) - 1))]
    if kind == "npz":
        return npz_bytes({"a": good})
    if kind == "pickle":
        return npy_bytes(np.array([{"x": 1}, None], dtype=object))
    return draw(st.binary(max_size=200))

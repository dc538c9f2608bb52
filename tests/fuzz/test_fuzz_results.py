"""Property-based fuzzing of what ``rescore`` and ``table`` read (docs/cli.md#bad-input): a real
episode cache and scores.json, damaged at random. Whatever survives the checks must also survive the
kernels and the table without an exception, and never rank an out-of-range value."""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from streameval.engine.scoring import episode_document, score_episode
from streameval.leaderboard import INCLUDE_ALL, build_table
from streameval.results.cache.episode import load_episode_cache
from streameval.results.scores_file import load_episode
from tests.fuzz.conftest import FUZZ, bounded, only_bad_input
from tests.fuzz.strategies import ARRAYS, JSON_VALUES, SCALARS, dumps, mangled_text


def _npz_members(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


@st.composite
def cache_damage(draw: st.DrawFn, members: dict[str, list[str]]) -> tuple[str, str, Any]:
    """(file, how, payload): one change to one file of the cache."""
    file = draw(st.sampled_from(["episode.json", "signals.npz", "memory.npz"]))
    if file == "episode.json":
        how = draw(st.sampled_from(["field", "drop", "text"]))
        key = draw(st.sampled_from(["fps", "model", "suite", "episode", "complete", "errors",
                                    "interactivity", "format", "memory",
                                    "equal_split_keys"]))  # fmt: skip
        keys = st.lists(st.sampled_from(["W", "S", "A", "D", "L", "R", "-"]), max_size=12)
        value = draw(st.one_of(JSON_VALUES, keys) if key == "equal_split_keys" else JSON_VALUES)
        return file, how, (key, value)
    how = draw(st.sampled_from(["member", "drop", "cut", "flip", "shrink", "extend"]))
    name = draw(st.sampled_from(members[file]))
    if how == "member":
        return file, how, (name, draw(ARRAYS))
    if how in ("cut", "flip"):
        return file, how, (draw(st.floats(0, 1)), draw(st.binary(min_size=1, max_size=8)))
    return file, how, (name, draw(st.sampled_from([-1e308, -3, 0, 1e308, np.nan, 10**6])))


def _apply(cache: Path, file: str, how: str, payload: Any) -> None:
    path = cache / file
    if file == "episode.json":
        try:
            doc = json.loads(path.read_text())
        except ValueError:
            return  # an earlier change already broke it
        if not isinstance(doc, dict):
            return
        key, value = payload
        if how == "field":
            doc[key] = value
        elif how == "drop":
            doc.pop(key, None)
        path.write_text(dumps(doc) if how != "text" else dumps(value), errors="surrogatepass")
        return
    data = path.read_bytes()
    if how in ("cut", "flip"):
        where, junk = payload
        at = int(where * (len(data) - 1))
        path.write_bytes(data[:at] if how == "cut" else data[:at] + junk + data[at + len(junk) :])
        return
    try:
        arrays = _npz_members(path)
    except Exception:
        return  # an earlier change already broke it
    name, value = payload
    if how in ("shrink", "extend") and name not in arrays:
        return  # dropped by an earlier change
    if how == "member":
        arrays[name] = value
    elif how == "drop":
        arrays.pop(name, None)
    elif how == "shrink" and arrays[name].size:
        arrays[name] = arrays[name][:-1] if arrays[name].ndim else arrays[name]
    elif how == "extend":
        with np.errstate(all="ignore"):
            flat = arrays[name].reshape(-1)
            if flat.size and flat.dtype.kind in "fiu":
                flat = flat.copy()
                flat[0] = np.asarray(value).astype(flat.dtype)
                arrays[name] = flat.reshape(arrays[name].shape)
    np.savez(path, **arrays)


@FUZZ
@given(data=st.data())
def test_fuzz_episode_cache_then_kernels(scored_dir: Path, data: st.DataObject) -> None:
    members = {
        "signals.npz": sorted(_npz_members(scored_dir / "cache" / "signals.npz")),
        "memory.npz": sorted(_npz_members(scored_dir / "cache" / "memory.npz")),
    }
    damages = data.draw(st.lists(cache_damage(members), min_size=1, max_size=3))
    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = shutil.copytree(scored_dir / "cache", Path(tmp) / "cache")
        for damage in damages:
            _apply(cache_dir, *damage)
        with bounded():
            cache = only_bad_input(lambda: load_episode_cache(cache_dir))
            if cache is None:
                return
            # passed the checks: the kernels must take it, and the document must be JSON
            scores = score_episode(cache)
            doc = episode_document(cache.meta, scores, len(cache.frame_keys))
            json.dumps(doc, allow_nan=False)
            for result in scores.metrics.values():
                if result.status == "official":
                    # the imaging statistics (docs/methods.md#imaging-statistics) are official
                    # with a raw value only
                    if result.normalized is None:
                        assert result.raw is not None and math.isfinite(result.raw)
                    else:
                        assert 0 <= result.normalized <= 100


def _set_path(doc: Any, path: list[Any], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def _paths(doc: Any, prefix: list[Any]) -> list[list[Any]]:
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, [*prefix, k])
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            out += _paths(v, [*prefix, i])
    return out


@FUZZ
@given(data=st.data())
def test_fuzz_scores_json_then_table(scored_dir: Path, data: st.DataObject) -> None:
    doc = json.loads((scored_dir / "scores.json").read_text())
    paths = _paths(doc, [])
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(paths))
        value = data.draw(st.one_of(SCALARS, JSON_VALUES))
        with contextlib.suppress(KeyError, IndexError, TypeError):  # gone with an earlier change
            _set_path(doc, where, value)
    text = data.draw(mangled_text(dumps(doc)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scores.json"
        path.write_text(text, errors="surrogatepass")
        with bounded():
            record = only_bad_input(lambda: load_episode(path))
            if record is None:
                return
            table = build_table([record], rule=INCLUDE_ALL)
            json.dumps(table.to_json(), allow_nan=False)
            for row in table.rows:
                for cell in row.cells.values():
                    if cell.value is not None:
                        assert math.isfinite(cell.value) and 0 <= cell.value <= 100

"""``.npz`` archives read back as checked arrays: the episode cache, a mask archive.

A truncated or garbage archive raises ``BadZipFile``, ``EOFError``, ``zlib.error`` or
``ValueError`` depending on where the damage is; a missing member a ``KeyError``. Here each of
those is one ``BadInputError`` naming the file and, for a member, which array and why.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.errors import BadInputError, one_line

# The cache of a two-hour episode is tens of MB; a larger archive is not one of ours.
MAX_NPZ_BYTES = 4 * 1024**3


def load_npz(path: Path) -> dict[str, npt.NDArray[Any]]:
    """Every array of the archive at ``path`` (no pickles), read completely now."""
    if not path.is_file():
        raise BadInputError(path, "not a regular file (a directory or a broken link)")
    if path.stat().st_size > MAX_NPZ_BYTES:
        raise BadInputError(path, f"larger than {MAX_NPZ_BYTES // 1024**3} GB")
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not hasattr(archive, "files"):
                raise BadInputError(path, "a single .npy array, expected an .npz archive")
            return {name: np.asarray(archive[name]) for name in archive.files}
    except BadInputError:
        raise
    # RuntimeError: zipfile refuses encrypted members and unknown versions (NotImplementedError)
    except (
        OSError,
        EOFError,
        ValueError,
        KeyError,
        RuntimeError,
        zlib.error,
        zipfile.BadZipFile,
    ) as exc:
        text = one_line(str(exc))
        if "pickle" in text:
            text = "holds Python objects (pickled data is never loaded)"
        raise BadInputError(path, f"unreadable archive ({type(exc).__name__}: {text})") from None


def member(
    data: dict[str, npt.NDArray[Any]],
    name: str,
    path: Path,
    *,
    ndim: int | None = None,
    kind: str | None = None,
    trailing: tuple[int, ...] = (),
) -> npt.NDArray[Any]:
    """``data[name]`` with ``ndim`` dimensions, a dtype kind among ``kind`` (numpy's letters:
    ``f`` float, ``i``/``u`` integer, ``b`` bool, ``U`` text) and trailing dimensions."""
    if name not in data:
        raise BadInputError(path, f"no array {name!r} (the cache is incomplete or not ours)")
    arr = data[name]
    if ndim is not None and arr.ndim != ndim:
        raise BadInputError(path, f"{name}: {arr.ndim} dimensions, expected {ndim}")
    if kind is not None and arr.dtype.kind not in kind:
        raise BadInputError(path, f"{name}: dtype {arr.dtype}, expected kind {kind!r}")
    if trailing and tuple(arr.shape[-len(trailing) :]) != trailing:
        raise BadInputError(path, f"{name}: shape {arr.shape}, expected (..., {trailing})")
    return arr


def scalar_flag(data: dict[str, npt.NDArray[Any]], name: str, path: Path) -> bool:
    """A 0-d boolean saved with the archive (``has_cuts``)."""
    arr = member(data, name, path, ndim=0, kind="b")
    return bool(arr)

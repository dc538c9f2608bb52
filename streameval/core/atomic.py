"""Whole-file writes that a reader never sees half done: write a temporary file beside the
target, then ``os.replace`` it over the target (atomic on one filesystem). Folders the same
way (``replace_folder_atomically``): built beside, then moved in place.

A failure while writing (a full disk, a value ``json`` refuses, Ctrl-C) removes the temporary
file and leaves the old target as it was. Only a process killed outright (SIGKILL, power cut)
can leave the temporary file behind; its name (``temp_path``) is never read as a result, and
the next write of the same target replaces it. Nothing is fsync'ed: a crash of the process
never exposes half a file, and a power cut may lose only the newest write, which a rerun
redoes.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

NPZ_SUFFIX = ".npz"
TMP_SUFFIX = ".tmp"


def temp_path(path: Path) -> Path:
    """The temporary file ``path`` is written through: ``name.tmp`` beside it, or
    ``stem.tmp.npz`` for an ``.npz`` archive (``np.savez`` appends ``.npz`` to any other
    name)."""
    if path.suffix == NPZ_SUFFIX:
        return path.with_name(path.stem + TMP_SUFFIX + NPZ_SUFFIX)
    return path.with_name(path.name + TMP_SUFFIX)


def replace_atomically(
    path: Path, write: Callable[[Path], object], tmp: Path | None = None
) -> None:
    """Call ``write(tmp)``, then move ``tmp`` over ``path``; on any failure remove ``tmp`` and
    re-raise (``path`` untouched). ``tmp`` defaults to ``temp_path(path)``; a writer that
    several processes may run at once names its own (the process id in it)."""
    tmp = temp_path(path) if tmp is None else tmp
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def replace_folder_atomically(
    path: Path,
    build: Callable[[Path], object],
    *,
    tmp: Path | None = None,
    keep_existing: bool = False,
) -> None:
    """Call ``build(tmp)`` on an empty folder ``tmp`` (default ``name.tmp`` beside ``path``),
    then put it in place of ``path``; on any failure remove ``tmp`` and re-raise. A folder
    moves only over an empty one or none, so an existing ``path`` is removed first: a reader
    may find no folder for an instant, never a half-built one. ``keep_existing``: a ``path``
    that is there already (another process's, in a shared cache) is kept and ``tmp`` dropped."""
    tmp = path.with_name(path.name + TMP_SUFFIX) if tmp is None else tmp
    try:
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        build(tmp)
        if path.exists():
            if keep_existing:
                shutil.rmtree(tmp)
                return
            shutil.rmtree(path)
        try:
            os.replace(tmp, path)
        except OSError:
            if not (keep_existing and path.exists()):  # not another process's, just in place
                raise
            shutil.rmtree(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_bytes_atomic(path: Path, data: bytes, *, tmp: Path | None = None) -> None:
    """``path.write_bytes(data)``, atomically."""
    replace_atomically(path, lambda t: t.write_bytes(data), tmp)


def write_text_atomic(
    path: Path, text: str, *, encoding: str = "utf-8", tmp: Path | None = None
) -> None:
    """``path.write_text(text)``, atomically."""
    replace_atomically(path, lambda t: t.write_text(text, encoding=encoding), tmp)


def write_json_atomic(
    path: Path,
    payload: Any,
    *,
    allow_nan: bool = False,
    default: Callable[[Any], Any] | None = None,
    tmp: Path | None = None,
) -> None:
    """``payload`` as indented JSON and a newline, atomically. NaN is refused unless
    ``allow_nan``: a non-finite number in a results file must have become a status first.
    The text is built before anything is written, so a refused value touches no file."""
    text = json.dumps(payload, indent=2, allow_nan=allow_nan, default=default) + "\n"
    write_text_atomic(path, text, tmp=tmp)


def savez_atomic(path: Path, arrays: Mapping[str, Any], *, tmp: Path | None = None) -> None:
    """``np.savez(path, **arrays)`` (uncompressed), atomically; ``path`` ends in ``.npz``."""
    import numpy as np  # on use: the JSON and text writers serve modules that load no numpy

    if path.suffix != NPZ_SUFFIX:
        raise ValueError(f"{path}: an .npz archive's name ends in .npz")
    replace_atomically(path, lambda t: np.savez(t, **arrays), tmp)

"""An ``.npy`` file grown one frame at a time, with flat memory.

The recorder gets depth maps one per frame and cannot know how many will come. It writes them to
``NAME.part`` behind a header slot of fixed size, and at ``finish`` writes the real header into
that slot and renames the file: no copy of gigabytes at the end, and a crash leaves only a
``.part`` file that readers ignore (rather than a ``.npy`` whose header lies).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.errors import InvalidDataError

# Magic (6) + version (2) + header length (2) + header: 128 bytes keeps the data 64-byte aligned,
# as numpy itself does, and leaves room for any (T, h, w) shape.
_HEADER_BYTES = 128
_PREAMBLE = b"\x93NUMPY\x01\x00"


def _header(dtype: np.dtype[Any], shape: tuple[int, ...]) -> bytes:
    text = repr(
        {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
    )
    body_len = _HEADER_BYTES - len(_PREAMBLE) - 2
    body = text.encode("latin1").ljust(body_len - 1) + b"\n"
    if len(body) != body_len:
        raise ValueError(f"shape {shape} does not fit the reserved .npy header")
    return _PREAMBLE + struct.pack("<H", body_len) + body


class NpyAppender:
    """Append equal-shaped frames of ``dtype``; ``finish`` makes ``path`` a (T, *frame) array."""

    def __init__(self, path: Path, dtype: npt.DTypeLike) -> None:
        self.path = path
        self.part = path.with_name(path.name + ".part")
        self.dtype = np.dtype(dtype).newbyteorder("<")
        self.frame_shape: tuple[int, ...] | None = None
        self.count = 0
        self._file = self.part.open("wb")
        self._file.write(b"\0" * _HEADER_BYTES)

    def append(self, frame: npt.ArrayLike) -> None:
        """Add one frame (converted to ``dtype``); its shape must match the first one's."""
        arr = np.ascontiguousarray(frame, dtype=self.dtype)
        if self.frame_shape is None:
            self.frame_shape = arr.shape
        elif arr.shape != self.frame_shape:
            raise InvalidDataError(
                f"frame shape {arr.shape} differs from the first, {self.frame_shape}"
            )
        self._file.write(arr.tobytes())
        self.count += 1

    def finish(self) -> Path | None:
        """Write the header, rename ``.part`` → ``path``; None (and no file) if nothing came."""
        if self._file.closed:
            return self.path if self.path.exists() else None
        if self.frame_shape is None:
            self.discard()
            return None
        self._file.seek(0)
        self._file.write(_header(self.dtype, (self.count, *self.frame_shape)))
        self._file.close()
        os.replace(self.part, self.path)
        return self.path

    def discard(self) -> None:
        """Drop what was written (the sidecar will not exist)."""
        if not self._file.closed:
            self._file.close()
        self.part.unlink(missing_ok=True)

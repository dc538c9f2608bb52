"""Where an ``exec:`` program's frames come from: new files in its output folder, or images
concatenated on its stdout.

- **Folder.** What matched the profile's ``files`` pattern before the program started is not
  ours (an earlier run's chunks); a file is new when its name was not there or it has
  changed since (a program that rewrites one ``current.mp4`` per chunk). New files are taken
  once their size and time have stayed the same for ``settle_ms`` (a writer may still be at
  it), in natural name order (``chunk_2`` before ``chunk_10``); images are one frame each,
  other files video chunks (``clips.py``).
- **Stdout.** JPEG (``FFD8`` … ``FFD9``) and PNG (signature … ``IEND``) images back to back;
  bytes that start no image are skipped and counted.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import Path

from streameval.core.arrays import Image
from streameval.transports.clips import decode_clip

MAX_STDOUT_BUFFER = 256 * 1024 * 1024
"""An image on stdout larger than this is no frame: the program is told off, not buffered."""
_JPEG_START, _JPEG_END = b"\xff\xd8\xff", b"\xff\xd9"
_PNG_START = b"\x89PNG\r\n\x1a\n"


def natural_key(name: str) -> list[int | str]:
    """``chunk_2`` before ``chunk_10``: digit runs compare as numbers."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


@dataclass
class FolderFrames:
    """New frame files in ``folder`` matching ``pattern``."""

    folder: Path
    pattern: str
    settle_s: float = 0.1
    _known: dict[str, tuple[int, int]] = field(default_factory=dict)

    def snapshot(self) -> None:
        """What is there before the program starts is not ours."""
        self._known = {p.name: s for p in self._matching() if (s := _stamp(p)) is not None}

    def _matching(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return [p for p in self.folder.glob(self.pattern) if p.is_file()]

    def new_files(self) -> list[Path]:
        fresh = [p for p in self._matching() if _stamp(p) not in (None, self._known.get(p.name))]
        return sorted(fresh, key=lambda p: natural_key(p.name))

    async def take(self) -> list[Path]:
        """The new files once they have settled (none: an empty list); they are then known."""
        files = self.new_files()
        while files:
            before = {p: _stamp(p) for p in files}
            await asyncio.sleep(self.settle_s)
            after = {p: _stamp(p) for p in files}
            if before == after and all(s is not None and s[0] > 0 for s in after.values()):
                for p, s in after.items():
                    assert s is not None
                    self._known[p.name] = s
                return files
            files = self.new_files()  # still being written, or more came: look again
        return []

    @staticmethod
    def decode(files: list[Path]) -> list[Image]:
        """Every frame of ``files`` in order (``ClipError`` names a file that cannot be used)."""
        frames: list[Image] = []
        for path in files:
            frames.extend(decode_clip(path, str(path)))
        return frames


@dataclass
class StdoutImages:
    """Splits stdout bytes into whole JPEG/PNG images."""

    images: list[bytes] = field(default_factory=list)
    skipped: int = 0  # bytes that started no image
    _buffer: bytearray = field(default_factory=bytearray)

    def feed(self, data: bytes) -> None:
        self._buffer += data
        while self._one():
            pass
        if len(self._buffer) > MAX_STDOUT_BUFFER:
            self.skipped += len(self._buffer)
            self._buffer.clear()

    def _one(self) -> bool:
        buf = self._buffer
        starts = [i for i in (buf.find(_JPEG_START), buf.find(_PNG_START)) if i >= 0]
        if not starts:
            keep = 7  # a signature may be cut across two reads
            if len(buf) > keep:
                self.skipped += len(buf) - keep
                del buf[: len(buf) - keep]
            return False
        start = min(starts)
        if start:
            self.skipped += start
            del buf[:start]
        end = self._jpeg_end() if buf.startswith(_JPEG_START) else self._png_end()
        if end is None:
            return False
        self.images.append(bytes(buf[:end]))
        del buf[:end]
        return True

    def _jpeg_end(self) -> int | None:
        # entropy-coded data stuffs every 0xFF with 0x00: FFD9 is the end of image only
        at = self._buffer.find(_JPEG_END, len(_JPEG_START))
        return None if at < 0 else at + 2

    def _png_end(self) -> int | None:
        buf, at = self._buffer, len(_PNG_START)
        while at + 8 <= len(buf):
            length = int.from_bytes(buf[at : at + 4], "big")
            kind = bytes(buf[at + 4 : at + 8])
            at += 12 + length
            if kind == b"IEND":
                return at if at <= len(buf) else None
        return None

    def take(self) -> list[bytes]:
        out, self.images = self.images, []
        return out

"""Where a rollout's pictures come from: a video file (PyAV) or ``frames/000000.png ...``.

Opening checks only what is cheap (the container opens, has a video stream, how many frames it
holds); decoding happens later, in the replay source's background thread, and a frame that cannot
be decoded surfaces there as ``FrameReadError`` naming the file and the frame.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol

import av
import cv2
import numpy as np
import numpy.typing as npt
from streameval.replay.layout import FRAME_NAME_DIGITS

from streameval.core.arrays import Image
from streameval.errors import BadInputError, FrameReadError, one_line

_FRAME_NAME = re.compile(rf"^(\d{{{FRAME_NAME_DIGITS}}})\.png$")


class FrameStore(Protocol):
    """The frames of one episode, read once, in order."""

    @property
    def path(self) -> Path:
        """What to name in messages: the video file or the frames directory."""
        ...

    def read(self) -> Iterator[Image]:
        """Yield H×W×3 uint8 RGB frames; raise ``FrameReadError`` on a bad one."""
        ...


@dataclass(frozen=True, slots=True)
class VideoProbe:
    """What the container says about its video stream, without decoding a frame."""

    width: int
    height: int
    fps: float | None
    frames: int
    codec: str
    # the rate when it can be trusted: the measured average (frames over duration) and the
    # stream's nominal rate agree within 1 % over at least two frames; None otherwise (a
    # variable frame rate, a container without timing)
    steady_fps: float | None = None


def _error_text(exc: BaseException) -> str:
    # av errors carry "[Errno n] Text: 'file'"; the text alone is the useful part.
    text = getattr(exc, "strerror", None) or str(exc)
    return one_line(str(text))


def _steady_rate(average: Fraction | None, nominal: Fraction | None, frames: int) -> float | None:
    """``average`` as a float when it and ``nominal`` are both known and agree within 1 %."""
    avg, nom = float(average or 0), float(nominal or 0)
    if frames < 2 or not (avg > 0 and nom > 0) or abs(avg - nom) > 0.01 * nom:
        return None
    return avg


def probe_video(path: Path) -> VideoProbe:
    """Open ``path``, check it has a video stream, count its frames.

    The count is the container's own (``stream.frames``) when it records one, otherwise a demux
    pass counting packets: no decoding, a few milliseconds per minute of video.
    """
    try:
        container = av.open(str(path))
    except (av.FFmpegError, OSError) as exc:
        raise BadInputError(path, f"cannot open video ({_error_text(exc)})") from None
    try:
        if not container.streams.video:
            raise BadInputError(path, "no video stream")
        stream = container.streams.video[0]
        width, height = stream.codec_context.width, stream.codec_context.height
        if width <= 0 or height <= 0:
            raise BadInputError(path, "the video stream has no frame size")
        rate = stream.average_rate or stream.guessed_rate or stream.base_rate
        fps = float(rate) if rate else None
        frames = int(stream.frames or 0)
        if frames <= 0:
            frames = 0
            try:
                for packet in container.demux(stream):
                    if packet.size:
                        frames += 1
            except av.FFmpegError:
                pass  # a damaged tail: the count so far stands, decoding will report the frame
        steady = _steady_rate(stream.average_rate, stream.guessed_rate, frames)
        return VideoProbe(width, height, fps, frames, stream.codec_context.name, steady)
    finally:
        container.close()


@dataclass(frozen=True, slots=True)
class VideoFrames:
    """Frames decoded from one video file with PyAV (which releases the GIL while decoding)."""

    path: Path

    def read(self) -> Iterator[Image]:
        try:
            container = av.open(str(self.path))
        except (av.FFmpegError, OSError) as exc:
            raise FrameReadError(self.path, f"cannot open video ({_error_text(exc)})") from None
        index = 0
        try:
            decoded = container.decode(container.streams.video[0])
            while True:
                try:
                    frame = next(decoded)
                    # rgb24 is always uint8; asarray only narrows the type (no copy).
                    image = np.asarray(frame.to_ndarray(format="rgb24"), dtype=np.uint8)
                except StopIteration:
                    return
                except av.FFmpegError as exc:
                    raise FrameReadError(
                        self.path, f"cannot decode frame {index} ({_error_text(exc)})"
                    ) from None
                yield image
                index += 1
        finally:
            container.close()


def list_frame_files(directory: Path) -> list[Path]:
    """``frames/000000.png ...`` in order; a name that does not parse or a gap is an error."""
    files: dict[int, Path] = {}
    for entry in sorted(directory.iterdir()):
        if entry.name.startswith("."):
            continue
        match = _FRAME_NAME.match(entry.name)
        if match is None or not entry.is_file():
            raise BadInputError(
                entry, f"not a frame file (expected {'0' * FRAME_NAME_DIGITS}.png, ...)"
            )
        files[int(match.group(1))] = entry
    if not files:
        raise BadInputError(directory, "no frame files")
    for i in range(len(files)):
        if i not in files:
            raise BadInputError(
                directory / f"{i:0{FRAME_NAME_DIGITS}d}.png",
                f"missing (frames must run from 0 without gaps; {len(files)} files found)",
            )
    return [files[i] for i in range(len(files))]


def read_png(path: Path, index: int) -> Image:
    """One PNG as H×W×3 uint8 RGB (gray is expanded, alpha dropped; 16-bit is refused)."""
    raw: npt.NDArray[Any] | None = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if raw is None:
        raise FrameReadError(path, f"cannot read frame {index}")
    if raw.dtype != np.uint8:
        raise FrameReadError(path, f"frame {index} has dtype {raw.dtype}, expected uint8")
    rgb: Image
    if raw.ndim == 2:
        rgb = np.ascontiguousarray(np.repeat(raw[:, :, None], 3, axis=2))
        return rgb
    if raw.ndim == 3 and raw.shape[2] in (3, 4):
        code = cv2.COLOR_BGRA2RGB if raw.shape[2] == 4 else cv2.COLOR_BGR2RGB
        rgb = np.asarray(cv2.cvtColor(raw, code), dtype=np.uint8)
        return rgb
    raise FrameReadError(path, f"frame {index} has shape {raw.shape}, expected H×W×3")


@dataclass(frozen=True, slots=True)
class PngFrames:
    """Frames stored one PNG per file; the sizes are checked by the reader of the stream."""

    path: Path
    files: tuple[Path, ...]

    def read(self) -> Iterator[Image]:
        for index, file in enumerate(self.files):
            yield read_png(file, index)

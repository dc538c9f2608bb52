"""The frames of a clip an on-demand server hands back: a video (a file, or its bytes) decoded
with PyAV, or one image, as H×W×3 uint8 RGB.

Called off the event loop (``asyncio.to_thread``): PyAV releases the GIL while it decodes.
Whatever cannot be used is one ``ClipError`` line saying what the clip is and what is wrong
(not a video, no video stream, no frames, a frame that does not decode, too large) — the
transport ends the episode with it, never with a traceback.
"""

from __future__ import annotations

import io
from pathlib import Path

import av
import cv2
import numpy as np

from streameval.core.arrays import Image
from streameval.errors import ClipError, one_line
from streameval.protocol.wire import MAX_FRAME_SIDE
from streameval.transports.profiles.ondemand import IMAGE_SUFFIXES

MAX_CLIP_FRAMES = 100_000
"""More frames than any chunk or segment of an episode: the rest of a clip is refused."""
_IMAGE_MAGIC = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"BM")


def is_image_bytes(data: bytes) -> bool:
    """JPEG, PNG, BMP or WebP (a RIFF file of kind WEBP: an AVI is RIFF too)."""
    webp = data.startswith(b"RIFF") and data[8:12] == b"WEBP"
    return webp or any(data.startswith(magic) for magic in _IMAGE_MAGIC)


def decode_clip(clip: bytes | Path, name: str) -> list[Image]:
    """Every frame of ``clip`` in order; ``name`` says in errors what the clip is."""
    if isinstance(clip, Path):
        if clip.suffix.lower() in IMAGE_SUFFIXES:
            return [_image(clip.read_bytes(), name)]
        return _video(str(clip), name)
    if is_image_bytes(clip):
        return [_image(clip, name)]
    return _video(io.BytesIO(clip), name)


def _image(data: bytes, name: str) -> Image:
    bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if bgr is None:
        raise ClipError(f"{name}: not an image that decodes ({len(data)} bytes)")
    _check_size(bgr.shape, name)
    image: Image = np.asarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), dtype=np.uint8)
    return image


def _check_size(shape: tuple[int, ...], name: str) -> None:
    if max(shape[:2]) > MAX_FRAME_SIDE:
        raise ClipError(f"{name}: {shape[1]}x{shape[0]} frames, over {MAX_FRAME_SIDE} px a side")


def _video(source: str | io.BytesIO, name: str) -> list[Image]:
    try:
        container = av.open(source, mode="r")
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise ClipError(f"{name}: not a video ({_why(exc)})") from None
    frames: list[Image] = []
    try:
        if not container.streams.video:
            raise ClipError(f"{name}: no video stream")
        try:
            for frame in container.decode(container.streams.video[0]):
                image = np.asarray(frame.to_ndarray(format="rgb24"), dtype=np.uint8)
                _check_size(image.shape, name)
                frames.append(image)
                if len(frames) > MAX_CLIP_FRAMES:
                    raise ClipError(f"{name}: more than {MAX_CLIP_FRAMES} frames")
        except (av.FFmpegError, ValueError) as exc:
            raise ClipError(f"{name}: frame {len(frames)} does not decode ({_why(exc)})") from None
    finally:
        container.close()
    if not frames:
        raise ClipError(f"{name}: a video with no frames")
    return frames


def _why(exc: BaseException) -> str:
    # av errors read "[Errno n] Text: 'file'": the text alone is the useful part
    return one_line(str(getattr(exc, "strerror", None) or exc))

"""Lossless video for recordings: ``libx264rgb`` with ``qp=0`` on rgb24 frames.

RGB in, RGB out, bit for bit: a replay of a recording sees exactly the pixels the live run saw,
so its scores are identical. Measured on a 2-core machine at 640×432: ~0.6 ms a frame to encode
(~1600 frames/s), ~2300 frames/s to decode back to RGB.

The mp4 is fragmented (a fragment per second of video, written as it goes), so a recording cut
short by a crash is still readable up to its last fragment; a classic mp4 keeps its index at
the end and is unreadable without it. Encoding runs in a writer thread behind a small bounded
queue: the caller (the event loop) pays only for the hand-off, and if the encoder falls behind
by more than ``capacity`` frames the caller waits instead of memory growing.
"""

from __future__ import annotations

import queue
import threading
from fractions import Fraction
from pathlib import Path

import av

from streameval.core.arrays import Image

CODEC = "libx264rgb"
PIX_FMT = "rgb24"
CODEC_OPTIONS = {"qp": "0", "preset": "ultrafast"}
# ``--record lossy``: ordinary H.264 at CRF 18 ("visually lossless"), about 30× smaller than
# qp=0 RGB on the procedural world; scores of its replay are close, not bit-identical.
LOSSY_CODEC = "libx264"
LOSSY_OPTIONS = {"crf": "18", "preset": "veryfast"}
# Fragment every second of video and hand each packet to the OS at once (otherwise a 256 KiB
# I/O buffer holds back many seconds of small frames): a crash loses about a second of video.
CONTAINER_OPTIONS = {
    "movflags": "empty_moov+default_base_moof",
    "frag_duration": "1000000",
    "flush_packets": "1",
}
DEFAULT_CAPACITY = 8


def _add_video_stream(
    container: av.container.OutputContainer, rate: Fraction, first: Image, lossy: bool
) -> av.video.stream.VideoStream:
    codec = LOSSY_CODEC if lossy else CODEC
    stream = container.add_stream(codec, rate=rate)
    if not isinstance(stream, av.video.stream.VideoStream):
        raise TypeError(f"{codec} did not give a video stream")
    height, width = int(first.shape[0]), int(first.shape[1])
    stream.width, stream.height = width, height
    if lossy:
        # 4:2:0 needs even sizes; an odd-sized model keeps full chroma instead.
        stream.pix_fmt = "yuv420p" if width % 2 == 0 and height % 2 == 0 else "yuv444p"
        stream.options = dict(LOSSY_OPTIONS)
    else:
        stream.pix_fmt = PIX_FMT
        stream.options = dict(CODEC_OPTIONS)
    return stream


class LosslessVideoWriter:
    """Write RGB frames to ``path`` losslessly (or ``lossy``); the first frame fixes the size."""

    def __init__(
        self, path: Path, fps: float, *, capacity: int = DEFAULT_CAPACITY, lossy: bool = False
    ) -> None:
        self.path = path
        self.lossy = lossy
        self.rate = Fraction(fps).limit_denominator(1_000_000)
        self.frames = 0
        self._queue: queue.Queue[Image | None] = queue.Queue(maxsize=capacity)
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise RuntimeError(f"{self.path}: encoding failed: {self._error}") from self._error

    def write(self, image: Image) -> None:
        """Queue one H×W×3 uint8 frame (blocks only when the encoder is ``capacity`` behind)."""
        if self._closed:
            raise RuntimeError(f"{self.path}: writer is closed")
        self._raise_if_failed()
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"encode:{self.path.name}", daemon=True
            )
            self._thread.start()
        self._queue.put(image)
        self.frames += 1

    def _run(self) -> None:
        container: av.container.OutputContainer | None = None
        stream: av.video.stream.VideoStream | None = None
        index = 0
        while True:
            image = self._queue.get()
            if image is None:
                break
            if self._error is not None:
                continue  # keep draining so the caller never blocks on a dead writer
            try:
                if container is None or stream is None:
                    container = av.open(
                        str(self.path), "w", format="mp4", options=CONTAINER_OPTIONS
                    )
                    stream = _add_video_stream(container, self.rate, image, self.lossy)
                frame = av.VideoFrame.from_ndarray(image, format=PIX_FMT)
                frame.pts = index
                container.mux(stream.encode(frame))
                index += 1
            except BaseException as exc:
                self._error = exc
        try:
            if container is not None and stream is not None and self._error is None:
                container.mux(stream.encode(None))
        except BaseException as exc:
            self._error = exc
        finally:
            if container is not None:
                container.close()

    def close(self) -> int:
        """Flush the encoder and close the file; returns the frames written. Raises on failure."""
        if not self._closed:
            self._closed = True
            if self._thread is not None:
                self._queue.put(None)
                self._thread.join()
        self._raise_if_failed()
        return self.frames

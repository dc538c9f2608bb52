"""Seeded synthetic rollouts for the replay tests (generated in tmp_path, never committed)."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import numpy.typing as npt

from streameval.core.events import EndOfStream, Event
from streameval.core.source import Source


def moving_texture(n: int, height: int, width: int, seed: int = 0) -> list[npt.NDArray[np.uint8]]:
    """``n`` RGB frames of a random texture that slides right and down, one pixel a frame."""
    rng = np.random.default_rng(seed)
    canvas = rng.integers(0, 256, size=(height + n, width + n, 3), dtype=np.uint8)
    return [np.ascontiguousarray(canvas[i : i + height, i : i + width]) for i in range(n)]


def write_video(
    path: Path,
    frames: Sequence[npt.NDArray[np.uint8]] | None = None,
    *,
    fps: float = 16,
    count: int = 0,
    size: tuple[int, int] = (32, 24),
    codec: str = "libx264",
    container_options: dict[str, str] | None = None,
) -> Path:
    """Encode ``frames`` (or ``count`` flat grey frames of ``size`` = (w, h)) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if frames is None:
        w, h = size
        grey = np.full((h, w, 3), 128, dtype=np.uint8)
        frames = [grey] * count
    container = av.open(str(path), "w", options=container_options or {})
    stream = container.add_stream(codec, rate=Fraction(fps).limit_denominator(1001))
    assert isinstance(stream, av.video.stream.VideoStream)
    stream.width, stream.height = frames[0].shape[1], frames[0].shape[0]
    stream.pix_fmt = "rgb24" if codec == "libx264rgb" else "yuv420p"
    stream.options = (
        {"preset": "ultrafast"}
        if codec.startswith("libx264")
        else {"deadline": "realtime", "cpu-used": "8"}
    )
    for i, image in enumerate(frames):
        frame = av.VideoFrame.from_ndarray(image, format="rgb24")
        frame.pts = i
        container.mux(stream.encode(frame))
    container.mux(stream.encode(None))
    container.close()
    return path


def write_meta(directory: Path, **fields: Any) -> None:
    meta = {
        "format": "streameval.rollout/1",
        "fps": 16,
        "suite": "keystroke16",
        "trajectory": None,
        "model": "synth",
        **fields,
    }
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "meta.json").write_text(json.dumps(meta))


def write_actions(directory: Path, keys: Sequence[str]) -> None:
    lines = [json.dumps({"frame": i, "key": k}) for i, k in enumerate(keys)]
    (directory / "actions.jsonl").write_text("\n".join(lines) + "\n")


def make_rollout_dir(
    directory: Path,
    keys: Sequence[str],
    *,
    size: tuple[int, int] = (32, 24),
    video_frames: int | None = None,
    fps: float = 16,
) -> Path:
    """A minimal valid rollout: meta.json, video.mp4 (grey), actions.jsonl."""
    write_meta(directory, fps=fps)
    write_video(
        directory / "video.mp4",
        count=video_frames if video_frames is not None else len(keys),
        size=size,
        fps=fps,
    )
    write_actions(directory, keys)
    return directory


async def drain(source: Source) -> list[Event]:
    """Every event up to ``EndOfStream``; closes the source."""
    events: list[Event] = []
    try:
        while True:
            events.append(await source.recv())
    except EndOfStream:
        return events
    finally:
        await source.close()


def collect(source: Source) -> list[Event]:
    return asyncio.run(drain(source))


def h264_roundtrip(
    frames: Sequence[npt.NDArray[np.uint8]], crf: int = 18, fps: int = 16
) -> list[npt.NDArray[np.uint8]]:
    """The frames through libx264 (CRF 18 is the lossy recording's setting) and back, in
    memory: real decoded video, with its blocking and chroma subsampling."""
    frames = list(frames)
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height = frames[0].shape[1], frames[0].shape[0]
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": str(crf)}
        for f in frames:
            out.mux(stream.encode(av.VideoFrame.from_ndarray(f, format="rgb24")))
        out.mux(stream.encode())
    buf.seek(0)
    with av.open(buf) as src:
        return [f.to_ndarray(format="rgb24") for f in src.decode(video=0)]

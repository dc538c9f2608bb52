"""What the quality metrics need from an episode (``core/episode/quality.py``), kept in its
cache: so ``rescore`` needs no video.

- the frames Q-Align samples (1 fps, ``metrics.quality.kernels.one_fps_frames``), as lossless PNG,
  shrunk so that their longer side is at most 448 px: Q-Align pads a frame to a square and
  resizes it to 448 × 448, so nothing it would see is lost (up to resampling order);
- the CPU imaging statistics, one row per frame (``metrics.quality.imaging.STAT_FIELDS``);
- what the Q-Align backend answered at episode end: the rating-word logits for the whole
  video and for each drift segment, per task, and which backend it was (or why it failed).

Scoring is a kernel over these (``metrics/quality/episode.py``); ``rescore --quality`` reruns
the model on the cached frames.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, MutableMapping
from pathlib import Path

import numpy as np

from streameval.core.arrays import Image
from streameval.core.atomic import replace_folder_atomically, savez_atomic, write_json_atomic
from streameval.core.episode.quality import QualityCache, QualityRatings
from streameval.errors import BadInputError

QUALITY_FRAME_SIDE = 448  # Q-Align's input side (its CLIP image processor)
FRAMES_DIR = "quality_frames"
STATS_FILE = "imaging.npz"
QUALITY_FILE = "quality.json"


def shrink_for_quality(image: Image) -> Image:
    """The frame with its longer side at most ``QUALITY_FRAME_SIDE`` (INTER_AREA)."""
    import cv2  # on use: the results layer and the kernels load without OpenCV

    h, w = image.shape[:2]
    scale = QUALITY_FRAME_SIDE / max(h, w)
    if scale >= 1.0:
        return np.ascontiguousarray(image)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return np.asarray(cv2.resize(image, size, interpolation=cv2.INTER_AREA), dtype=np.uint8)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _looks_like_png(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(len(PNG_SIGNATURE)) == PNG_SIGNATURE
    except OSError:
        return False


class PngFrames(MutableMapping[int, Image]):
    """Cached 1-fps frames by index, each decoded from its PNG when first read (then kept).

    Counting and membership need no decoding: scoring only counts the frames; only a Q-Align
    rerating looks at their pixels, and OpenCV is imported then.
    """

    def __init__(self) -> None:
        self._paths: dict[int, Path] = {}
        self._decoded: dict[int, Image] = {}

    def add(self, index: int, path: Path) -> None:
        self._paths[index] = path

    def __getitem__(self, index: int) -> Image:
        if index in self._decoded:
            return self._decoded[index]
        path = self._paths[index]
        import cv2  # on use: the results layer loads without OpenCV

        bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if bgr is None:
            raise BadInputError(path, "unreadable quality frame")
        frame: Image = np.asarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), dtype=np.uint8)
        self._decoded[index] = frame
        return frame

    def __setitem__(self, index: int, frame: Image) -> None:
        self._paths.pop(index, None)
        self._decoded[index] = frame

    def __delitem__(self, index: int) -> None:
        if index not in self:
            raise KeyError(index)
        self._paths.pop(index, None)
        self._decoded.pop(index, None)

    def __contains__(self, index: object) -> bool:
        return index in self._paths or index in self._decoded

    def __iter__(self) -> Iterator[int]:
        return iter(sorted({*self._paths, *self._decoded}))

    def __len__(self) -> int:
        return len({*self._paths, *self._decoded})


def save_quality(quality: QualityCache, directory: Path) -> None:
    """Write the quality part of a cache into the cache folder ``directory``: the frames
    folder replaced as a whole, then the statistics and the answers, atomically per file."""
    import cv2  # on use: the results layer and the kernels load without OpenCV

    def write_frames(folder: Path) -> None:
        for index, frame in sorted(quality.frames.items()):
            ok, png = cv2.imencode(".png", cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
            if not ok:
                raise OSError(f"cannot encode quality frame {index} as PNG")
            (folder / f"{index:06d}.png").write_bytes(png.tobytes())

    directory.mkdir(parents=True, exist_ok=True)
    replace_folder_atomically(
        directory / FRAMES_DIR, write_frames, tmp=directory / (FRAMES_DIR + ".tmp")
    )
    stats = quality.statistics if quality.statistics is not None else np.zeros((0, 0))
    savez_atomic(
        directory / STATS_FILE,
        {"statistics": stats, "has_statistics": np.array(quality.statistics is not None)},
        tmp=directory / "imaging.tmp.npz",
    )
    payload = {
        "ratings": quality.ratings.to_json() if quality.ratings is not None else None,
        "failure": quality.failure,
    }
    write_json_atomic(directory / QUALITY_FILE, payload)


def load_quality(directory: Path) -> QualityCache | None:
    """The quality part of a cache, None for a cache written before it existed. Frames
    are decoded when first read (only a Q-Align rerating reads them), so a plain
    ``rescore`` needs no image codec."""

    json_path = directory / QUALITY_FILE
    if not json_path.is_file():
        return None
    try:
        payload = json.loads(json_path.read_text())
    except json.JSONDecodeError as exc:
        raise BadInputError(json_path, f"not valid JSON ({exc.msg})") from None
    frames = PngFrames()
    frames_dir = directory / FRAMES_DIR
    if frames_dir.is_dir():
        for png in sorted(frames_dir.glob("*.png")):
            if not png.stem.isdigit() or not _looks_like_png(png):
                raise BadInputError(png, "unreadable quality frame")
            frames.add(int(png.stem), png)
    statistics = None
    stats_path = directory / STATS_FILE
    if stats_path.is_file():
        try:
            with np.load(stats_path, allow_pickle=False) as z:
                if bool(z["has_statistics"]):
                    statistics = z["statistics"].astype(np.float64, copy=False)
        except (OSError, ValueError, KeyError) as exc:
            raise BadInputError(stats_path, f"unreadable imaging statistics ({exc})") from None
    ratings = None
    raw = payload.get("ratings")
    if raw is not None:
        ratings = QualityRatings(
            str(raw["backend"]),
            {str(k): [float(x) for x in v] for k, v in raw["logits"].items()},
            {
                str(k): [[float(x) for x in seg] for seg in v]
                for k, v in raw["segment_logits"].items()
            },
        )
    return QualityCache(frames, statistics, ratings, payload.get("failure"))

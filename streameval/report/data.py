"""What a report reads: the episode's scores.json, its cache signals, and (when a recording
sits beside it) the few frames the memory metrics compared.

Reports are built from files only, never from pipeline state, so ``streameval report`` can
draw any finished results folder again, and a report always matches what ``rescore`` sees.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.constants import DEFAULT_FPS
from streameval.core.arrays import Image
from streameval.errors import BadInputError
from streameval.results.scores_file import SCORES_FILE

THUMB_WIDTH = 160  # px: enough to recognise a view, small enough for 40 of them in one page


@dataclass
class EpisodeData:
    """One finished episode, as the report draws it."""

    results_dir: Path
    scores: dict[str, Any]
    sx: npt.NDArray[np.float64] | None = None
    srad: npt.NDArray[np.float64] | None = None
    frame_keys: list[str] = field(default_factory=list)
    video: Path | None = None  # recording/video.mp4 (live runs) or the replayed rollout's video

    @property
    def fps(self) -> float:
        return float(self.scores.get("fps") or DEFAULT_FPS)

    def metric(self, name: str) -> dict[str, Any]:
        entry = self.scores.get("metrics", {}).get(name)
        return entry if isinstance(entry, dict) else {}

    def details(self, name: str) -> dict[str, Any]:
        details = self.metric(name).get("details")
        return details if isinstance(details, dict) else {}


def load_episode_data(results_dir: Path) -> EpisodeData:
    """Read ``results_dir``; a missing cache only removes the signal plots (the scores stay)."""
    path = results_dir / SCORES_FILE
    try:
        scores = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadInputError(path, f"cannot read scores ({exc})") from None
    if not isinstance(scores, dict):
        raise BadInputError(path, "expected a JSON object")
    data = EpisodeData(results_dir, scores)
    signals = results_dir / "cache" / "signals.npz"
    if signals.is_file():
        try:
            with np.load(signals, allow_pickle=False) as z:
                data.sx = z["sx"].astype(np.float64)
                data.srad = z["srad"].astype(np.float64)
                data.frame_keys = [str(k) for k in z["frame_keys"]]
        except (OSError, ValueError, KeyError):
            data.sx = data.srad = None
    video = results_dir / "recording" / "video.mp4"
    data.video = video if video.is_file() else _source_video(scores)
    return data


def _source_video(scores: dict[str, Any]) -> Path | None:
    """The video of the replayed rollout, when the source is a rollout folder still on disk."""
    source = scores.get("provenance", {}).get("source")
    if not isinstance(source, str):
        return None
    path = Path(source)
    for candidate in (path / "video.mp4", path):
        if candidate.is_file() and candidate.suffix.lower() in {".mp4", ".mkv", ".webm", ".avi"}:
            return candidate
    return None


def read_thumbnails(video: Path | None, frames: Iterable[int]) -> dict[int, Image]:
    """Frames ``frames`` of ``video``, scaled to ``THUMB_WIDTH`` (empty when unreadable).

    One sequential decode: seeking would land on keyframes and return the wrong frame.
    """
    wanted = sorted({int(f) for f in frames if int(f) >= 0})
    if video is None or not wanted:
        return {}
    import av
    import cv2

    out: dict[int, Image] = {}
    last = wanted[-1]
    want = set(wanted)
    try:
        with av.open(str(video)) as container:
            for index, frame in enumerate(container.decode(video=0)):
                if index in want:
                    rgb = frame.to_ndarray(format="rgb24")
                    h, w = rgb.shape[:2]
                    size = (THUMB_WIDTH, max(1, round(h * THUMB_WIDTH / w)))
                    out[index] = np.ascontiguousarray(
                        cv2.resize(rgb, size, interpolation=cv2.INTER_AREA)
                    )
                if index >= last:
                    break
    except (OSError, ValueError, av.error.FFmpegError):
        return out
    return out

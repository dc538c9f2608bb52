"""File names of the rollout directory (DESIGN §4), named once for the reader and the recorder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from streameval.errors import BadInputError

ROLLOUT_FORMAT = "streameval.rollout/1"

META = "meta.json"
ACTIONS = "actions.jsonl"
KEYS = "keys.jsonl"
FRAMES_DIR = "frames"
VIDEO_STEM = "video"
RECORDED_VIDEO = "video.mp4"
POSES = "poses.npy"
INTRINSICS = "intrinsics.npy"
DEPTH = "depth_metric.npy"
DEPTH_MASK = "depth_valid_mask.npz"

# Adapter layout (replay/adapters.py): a video beside one of these per-frame key lists.
ADAPTER_ACTIONS_JSON = "actions.json"
ADAPTER_ACTIONS_NPY = "actions.npy"

# Containers PyAV opens that people actually deliver rollouts in.
VIDEO_SUFFIXES: frozenset[str] = frozenset({".mp4", ".mkv", ".webm", ".avi", ".mov"})

# frames/000000.png ... : six digits, as in DESIGN §4.
FRAME_NAME_DIGITS = 6


def is_video_file(path: Path) -> bool:
    """A regular file whose suffix names a container we decode."""
    return path.suffix.lower() in VIDEO_SUFFIXES and path.is_file()


def one_line(text: str) -> str:
    """Error messages are one line (DESIGN §6): fold whatever a library told us."""
    return " ".join(text.split())


def read_json(path: Path) -> Any:
    """Parse a JSON file; an unreadable file or bad JSON is BadInputError naming the file."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInputError(path, f"cannot read ({one_line(str(exc))})") from None
    except json.JSONDecodeError as exc:
        raise BadInputError(path, f"not JSON ({exc.msg} at line {exc.lineno})") from None

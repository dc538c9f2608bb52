"""File names of the rollout directory (docs/cli.md#rollout-directory), named once for the reader
and the recorder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streameval.inputs.jsonfile import read_json_file
from streameval.inputs.paths import present

__all__ = ["present"]  # re-exported for the readers beside this module

ROLLOUT_FORMAT = "streameval.rollout/1"

META = "meta.json"
# A benchmark case run's record (``runs/cases.py``) in ``OUT/<model>/``: the folder's episodes
# are its cases, each with its recording at ``<set>/<case>/recording/``.
CASE_RUN = "cases.json"
RECORDING_DIR = "recording"
ACTIONS = "actions.jsonl"
KEYS = "keys.jsonl"
CHUNKS = "chunks.jsonl"
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

# frames/000000.png ... : six digits, as in docs/cli.md#rollout-directory.
FRAME_NAME_DIGITS = 6


def is_video_file(path: Path) -> bool:
    """A regular file whose suffix names a container we decode."""
    return path.suffix.lower() in VIDEO_SUFFIXES and path.is_file()


def read_json(path: Path) -> Any:
    """Parse a JSON file under the input layer's bounds (size, depth, digits, finite numbers);
    every problem is a BadInputError naming the file."""
    return read_json_file(path)

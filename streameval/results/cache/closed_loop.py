"""The closed-loop part of a memory_loop episode cache (``cache/closed_loop/``): so ``rescore``
needs no video.

- ``frames/NNNNNN.png``: the frames of the ≤ 24 scored revisit pairs (≤ 48 frames), lossless,
  longer side at most ``CLOSED_LOOP_FRAME_SIDE`` (320 px: about 100 kB each, ≤ 5 MB an
  episode) — exactly the arrays the live run scored;
- ``closed_loop.npz``: the pair indices, per-frame intrinsics at that size, and what the
  appearance and Gram backends answered for each pair (features, texture distances);
- ``closed_loop.json``: the backends' names and why one was unavailable.

Values are checked for shape here (a damaged file is one ``BadInputError`` naming it); the
kernel (``metrics/worldatlas/closed_loop_scores.py``) judges the rest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from streameval.core.atomic import replace_folder_atomically
from streameval.core.episode.closed_loop import ClosedLoopFrames
from streameval.errors import BadInputError
from streameval.inputs.npz import load_npz, member

CLOSED_LOOP_DIR = "closed_loop"
CLOSED_LOOP_FRAME_SIDE = 320
_FRAMES = "frames"
_ARRAYS = "closed_loop.npz"
_META = "closed_loop.json"
_TEXT_FIELDS = (
    "feature_backend",
    "feature_problem",
    "gram_backend",
    "gram_problem",
)


def save_closed_loop(kept: ClosedLoopFrames, directory: Path) -> None:
    """Write ``directory`` (replaced as a whole, so a rescore never sees half of it)."""
    replace_folder_atomically(directory, lambda tmp: _write_closed_loop(kept, tmp))


def _write_closed_loop(kept: ClosedLoopFrames, tmp: Path) -> None:
    """The revisit frames (PNG), their arrays and their text fields, into the empty ``tmp``."""
    import cv2  # on use: the results layer loads without OpenCV

    (tmp / _FRAMES).mkdir()
    for index, frame in sorted(kept.frames.items()):
        ok, png = cv2.imencode(".png", cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
        if not ok:
            raise OSError(f"cannot encode revisit frame {index} as PNG")
        (tmp / _FRAMES / f"{index:06d}.png").write_bytes(png.tobytes())
    k_index = sorted(kept.intrinsics)
    arrays: dict[str, Any] = {
        "pairs": np.asarray(kept.pairs, dtype=np.int64).reshape(-1, 2),
        "intrinsics_frames": np.array(k_index, dtype=np.int64),
        "intrinsics": np.array([kept.intrinsics[i] for i in k_index], np.float64).reshape(-1, 3, 3),
    }
    if kept.features is not None:
        arrays["features"] = kept.features
    if kept.gram is not None:
        arrays["gram"] = kept.gram
    np.savez(tmp / _ARRAYS, **arrays)
    meta = {"frame_side": kept.frame_side, **{k: getattr(kept, k) for k in _TEXT_FIELDS}}
    (tmp / _META).write_text(json.dumps(meta, indent=2, allow_nan=False) + "\n")


def load_closed_loop(directory: Path) -> ClosedLoopFrames | None:
    """The kept revisit frames, None for a cache written before they were kept."""
    import cv2  # on use: the results layer loads without OpenCV

    meta_path = directory / _META
    if not meta_path.is_file():
        return None
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as exc:
        raise BadInputError(meta_path, f"not valid JSON ({exc.msg})") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("frame_side"), int):
        raise BadInputError(meta_path, "not a closed-loop cache description")
    texts = {k: meta.get(k) for k in _TEXT_FIELDS}
    if not all(v is None or isinstance(v, str) for v in texts.values()):
        raise BadInputError(meta_path, "backend names and problems must be strings or null")
    path = directory / _ARRAYS
    data = load_npz(path)
    pairs = member(data, "pairs", path, ndim=2, kind="iu", trailing=(2,)).astype(np.int64)
    k_frames = member(data, "intrinsics_frames", path, ndim=1, kind="iu")
    intrinsics = member(data, "intrinsics", path, ndim=3, kind="f", trailing=(3, 3))
    if len(k_frames) != len(intrinsics):
        raise BadInputError(path, f"{len(k_frames)} intrinsics frames for {len(intrinsics)}")
    features = gram = None
    if "features" in data:
        features = member(data, "features", path, ndim=3, kind="f")
        if features.shape[:2] != (len(pairs), 2):
            raise BadInputError(path, f"features {features.shape} for {len(pairs)} pairs")
    if "gram" in data:
        gram = member(data, "gram", path, ndim=1, kind="f").astype(np.float64)
        if len(gram) != len(pairs):
            raise BadInputError(path, f"{len(gram)} Gram distances for {len(pairs)} pairs")
    frames: dict[int, np.ndarray[Any, np.dtype[np.uint8]]] = {}
    for png in sorted((directory / _FRAMES).glob("*.png")):
        bgr = cv2.imread(str(png), cv2.IMREAD_COLOR)
        if bgr is None or not png.stem.isdigit():
            raise BadInputError(png, "unreadable revisit frame")
        frames[int(png.stem)] = np.asarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
    return ClosedLoopFrames(
        pairs=pairs,
        frames=frames,
        frame_side=int(meta["frame_side"]),
        intrinsics={
            int(i): k.astype(np.float64) for i, k in zip(k_frames, intrinsics, strict=True)
        },
        features=features,
        feature_backend=texts["feature_backend"],
        feature_problem=texts["feature_problem"],
        gram=gram,
        gram_backend=texts["gram_backend"],
        gram_problem=texts["gram_problem"],
    )

"""Arrays at the boundary: ``.npy`` files, per-frame geometry from a model, cache archives.

``np.load`` happily returns an ``NpzFile`` for an archive saved under a ``.npy`` name, and its
pickle refusal tells the user to pass ``allow_pickle=True`` — advice an evaluator must never
give about somebody else's file. Geometry is checked for what the metrics assume: a pose's
rotation block is a rotation (orthonormal, det +1), intrinsics are a pinhole matrix.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.errors import BadInputError, one_line

# A rotation estimated in float32 by a pose network is orthonormal to ~1e-6; ViPE and COLMAP
# outputs to ~1e-7. 1e-3 accepts every real estimator and refuses scaled or sheared matrices.
ROTATION_TOL = 1e-3
# Homogeneous last rows and pinhole zeros: float noise only.
HOMOGENEOUS_TOL = 1e-4


def _load_error(path: Path, exc: BaseException) -> BadInputError:
    text = one_line(str(exc))
    if "allow_pickle" in text or "pickle" in text.lower():
        return BadInputError(path, "holds Python objects (pickled data is never loaded)")
    return BadInputError(path, f"not a .npy array ({text})")


def load_npy(path: Path, *, mmap: bool = False) -> npt.NDArray[Any]:
    """One plain array from a ``.npy`` file: never a pickle, never an archive."""
    if not path.is_file():
        raise BadInputError(path, "not a regular file (a directory or a broken link)")
    try:
        with path.open("rb") as f:
            head = f.read(4)
    except OSError as exc:
        raise BadInputError(path, f"cannot read ({one_line(exc.strerror or str(exc))})") from None
    if head.startswith(b"PK"):
        raise BadInputError(path, "is an .npz archive saved under a .npy name")
    try:
        arr = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise _load_error(path, exc) from None
    if not isinstance(arr, np.ndarray):
        raise BadInputError(path, f"not a single array ({type(arr).__name__})")
    return arr


def check_real_dtype(arr: npt.NDArray[Any], source: object) -> None:
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise BadInputError(source, f"dtype {arr.dtype} is not a real number type")


def rotation_problem(rotation: npt.NDArray[np.float64]) -> str | None:
    """Why a 3×3 block is not a rotation, or None (``R Rᵀ = I``, ``det R = +1``)."""
    gram_error = float(np.abs(rotation @ rotation.T - np.eye(3)).max())
    if gram_error > ROTATION_TOL:
        return f"rotation part is not orthonormal (|R Rᵀ − I| = {gram_error:.3g})"
    det = float(np.linalg.det(rotation))
    if det < 0:
        return "rotation part is a reflection (det < 0)"
    return None


def pose_problem(pose: npt.NDArray[np.float64]) -> str | None:
    """Why a 4×4 camera-to-world matrix is unusable, or None."""
    if pose.shape != (4, 4):
        return f"shape {pose.shape}, expected (4, 4)"
    if not np.isfinite(pose).all():
        return "non-finite values"
    if np.abs(pose[3] - np.array([0.0, 0.0, 0.0, 1.0])).max() > HOMOGENEOUS_TOL:
        return f"last row {pose[3].tolist()} is not [0, 0, 0, 1]"
    return rotation_problem(pose[:3, :3])


def intrinsics_problem(k: npt.NDArray[np.float64]) -> str | None:
    """Why a 3×3 matrix is not pinhole intrinsics ``[[fx, s, cx], [0, fy, cy], [0, 0, 1]]``."""
    if k.shape != (3, 3):
        return f"shape {k.shape}, expected (3, 3)"
    if not np.isfinite(k).all():
        return "non-finite values"
    if np.abs(k[2] - np.array([0.0, 0.0, 1.0])).max() > HOMOGENEOUS_TOL or abs(k[1, 0]) > (
        HOMOGENEOUS_TOL
    ):
        return f"not pinhole intrinsics (last row {k[2].tolist()}, K[1,0] = {k[1, 0]:g})"
    if not (k[0, 0] > 0 and k[1, 1] > 0):
        return f"focal lengths fx = {k[0, 0]:g}, fy = {k[1, 1]:g} must be positive"
    return None


def first_bad(stack: npt.NDArray[np.float64], problem: Any) -> tuple[int, str] | None:
    """The first (index, reason) where ``problem(stack[i])`` is not None."""
    for i in range(stack.shape[0]):
        why = problem(stack[i])
        if why is not None:
            return i, why
    return None


# A depth map may have any size (docs/evaluate-your-model.md: "resized as needed"), but it is a
# resize of its frame: one scale for both axes. Rounding each side to a network's multiple
# (14 for DPT) moves the two scales apart by a few percent; more is another picture's depth.
DEPTH_ASPECT_TOL = 0.05


def _integer_downsample(h: int, w: int, big_h: int, big_w: int) -> bool:
    """``(h, w)`` is ``(H, W)`` divided by one integer k, each side floored or rounded (the
    procedural world's ``width // depth_downsample``): small maps, where one pixel of rounding
    is more than the aspect tolerance."""
    candidates = {big_h // h, round(big_h / h), big_w // w, round(big_w / w)}
    for k in {c + d for c in candidates for d in (-1, 0, 1)}:
        if k >= 1 and (
            (big_h // k, big_w // k) == (h, w) or (round(big_h / k), round(big_w / k)) == (h, w)
        ):
            return True
    return False


def depth_problem(depth: npt.NDArray[Any], image_size: tuple[int, int] | None = None) -> str | None:
    """Why a per-frame depth map is unusable (values may be inf or NaN: sky, no depth).

    With ``image_size`` = the frame's (H, W): the map must be a resize of the frame — the same
    scale on both axes within ``DEPTH_ASPECT_TOL``, or an integer downsample of it. A 3×3 map
    for a 96×128 frame is neither: its pixels would be placed on the wrong image points.
    """
    if depth.ndim != 2 or min(depth.shape) < 1:
        return f"shape {depth.shape}, expected (h, w)"
    if not (np.issubdtype(depth.dtype, np.floating) or np.issubdtype(depth.dtype, np.integer)):
        return f"dtype {depth.dtype} is not a real number type"
    if image_size is not None:
        h, w = (int(n) for n in depth.shape)
        big_h, big_w = (int(n) for n in image_size)
        scales = (w / big_w) / (h / big_h)
        if abs(scales - 1.0) > DEPTH_ASPECT_TOL and not _integer_downsample(h, w, big_h, big_w):
            return (
                f"shape {depth.shape} is not a resize of the {big_h}×{big_w} frame "
                f"(aspect {w / h:.3g}, the frame's {big_w / big_h:.3g})"
            )
    return None


def as_array(value: object, dtype: type, source: object, what: str) -> npt.NDArray[Any]:
    """``np.asarray(value, dtype)``; anything numpy cannot convert names the input."""
    try:
        return np.asarray(value, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as exc:
        problem = f"{what} is not a numeric array ({one_line(str(exc))})"
        raise BadInputError(source, problem) from None

"""Optional geometry beside a rollout's video: poses, intrinsics, metric depth (ViPE layout).

``poses.npy`` (T,4,4) camera-to-world, ``intrinsics.npy`` (3,3) or (T,3,3), ``depth_metric.npy``
(T,h,w) floating point, ``depth_valid_mask.npz`` (T,h,w) bool beside it. Poses and intrinsics are
small: they are loaded and checked completely when the rollout is opened (a NaN pose names the
first bad frame). Depth can be gigabytes, so opening only checks its header (shape, dtype,
frame count); the values are read frame by frame while streaming, through a memory map and a
sequential reader of the compressed mask, so memory stays flat. Pixels the mask marks invalid are
delivered as NaN: "no depth here" must not look like a depth of 0. Depth values themselves pass
through untouched (a model's +inf for the sky stays +inf), so a replay of a recording hands the
perception exactly the depth the live run had.
"""

from __future__ import annotations

import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt
from streameval.replay.layout import DEPTH, DEPTH_MASK, INTRINSICS, POSES, present

from streameval.core.arrays import F64
from streameval.errors import BadInputError, DepthFrameError, one_line
from streameval.inputs.arrays import (
    check_real_dtype,
    first_bad,
    intrinsics_problem,
    load_npy,
    pose_problem,
)

# Member names a ViPE-style mask archive may use, in order of preference.
_MASK_MEMBERS = ("mask", "valid_mask", "depth_valid_mask", "valid")


@dataclass(frozen=True, slots=True)
class DepthSpec:
    """Where the depth lives and what its header says; values are read while streaming."""

    path: Path
    shape: tuple[int, int, int]
    mask_path: Path | None = None
    mask_member: str | None = None


POSES_KIND = "poses"
DEPTH_KIND = "depth"


@dataclass(frozen=True, slots=True)
class SidecarProblem:
    """A sidecar that is present but unusable: the file, what is wrong, and what it spoils
    (``poses``: every pose-track metric; ``depth``: the ones that back-project depth)."""

    path: Path
    problem: str
    spoils: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


@dataclass(frozen=True, slots=True, eq=False)
class Sidecars:
    """Validated geometry for ``frames`` frames; every part optional. A part whose file is
    unusable is None and its defect is in ``problems``: the episode is still replayed."""

    frames: int
    poses: F64 | None = None
    intrinsics: F64 | None = None
    depth: DepthSpec | None = None
    problems: tuple[SidecarProblem, ...] = ()

    def problems_by_kind(self) -> dict[str, str]:
        """``{"poses" | "depth": "<file>: <what is wrong>; ..."}`` for the episode's metadata."""
        kinds: dict[str, list[str]] = {}
        for p in self.problems:
            kinds.setdefault(p.spoils, []).append(f"{p.path.name}: {p.problem}")
        return {kind: "; ".join(messages) for kind, messages in kinds.items()}

    def pose_at(self, index: int) -> F64 | None:
        return None if self.poses is None else self.poses[index]

    def intrinsics_at(self, index: int) -> F64 | None:
        if self.intrinsics is None:
            return None
        return self.intrinsics if self.intrinsics.ndim == 2 else self.intrinsics[index]

    def open_depth(self) -> DepthReader | None:
        """A sequential reader of the depth frames (open it in the thread that will read)."""
        return None if self.depth is None else DepthReader(self.depth)

    def present(self) -> list[str]:
        """File names of the sidecars present (provenance: ``pose_source``, ``depth_source``)."""
        found = {POSES: self.poses, INTRINSICS: self.intrinsics, DEPTH: self.depth}
        return [name for name, value in found.items() if value is not None]


def _load_small(path: Path) -> npt.NDArray[Any]:
    arr = load_npy(path)
    check_real_dtype(arr, path)
    return arr


def _first_nonfinite_frame(arr: npt.NDArray[np.float64]) -> int | None:
    bad = ~np.isfinite(arr.reshape(arr.shape[0], -1)).all(axis=1)
    hits = np.flatnonzero(bad)
    return int(hits[0]) if hits.size else None


def _read_only(arr: npt.NDArray[np.float64]) -> F64:
    arr.flags.writeable = False  # every FrameEvent gets a view; nobody may change the recording
    return arr


def load_poses(path: Path, frames: int) -> F64:
    """(T,4,4) camera-to-world, finite, homogeneous, one per frame."""
    raw = _load_small(path)
    if raw.ndim != 3 or raw.shape[1:] != (4, 4):
        raise BadInputError(path, f"shape {raw.shape}, expected ({frames}, 4, 4) camera-to-world")
    if raw.shape[0] != frames:
        raise BadInputError(path, f"{raw.shape[0]} poses for {frames} frames")
    poses = np.asarray(raw, dtype=np.float64)
    bad = _first_nonfinite_frame(poses)
    if bad is not None:
        raise BadInputError(path, f"non-finite pose at frame {bad}")
    bad_pose = first_bad(poses, pose_problem)  # Global Memory assumes rigid camera motion
    if bad_pose is not None:
        raise BadInputError(path, f"frame {bad_pose[0]}: {bad_pose[1]}")
    return _read_only(np.ascontiguousarray(poses))


def load_intrinsics(path: Path, frames: int) -> F64:
    """(3,3) for the whole episode or (T,3,3) per frame, finite."""
    raw = _load_small(path)
    if raw.shape != (3, 3) and not (raw.ndim == 3 and raw.shape[1:] == (3, 3)):
        raise BadInputError(path, f"shape {raw.shape}, expected (3, 3) or ({frames}, 3, 3)")
    if raw.ndim == 3 and raw.shape[0] != frames:
        raise BadInputError(path, f"{raw.shape[0]} intrinsics for {frames} frames")
    k = np.asarray(raw, dtype=np.float64)
    # Checked here, not when Global Memory first projects a point at the episode's end.
    if k.ndim == 2:
        why = intrinsics_problem(k)
        if why is not None:
            raise BadInputError(path, why)
    else:
        bad = first_bad(k, intrinsics_problem)
        if bad is not None:
            raise BadInputError(path, f"frame {bad[0]}: {bad[1]}")
    return _read_only(np.ascontiguousarray(k))


def _npy_header(fp: IO[bytes], where: Path) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    try:
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(fp)
        return np.lib.format.read_array_header_2_0(fp)
    except ValueError as exc:
        raise BadInputError(where, f"not a .npy array ({one_line(str(exc))})") from None


def _mask_member(path: Path, archive: zipfile.ZipFile) -> str:
    members = [n for n in archive.namelist() if n.endswith(".npy")]
    if len(members) == 1:
        return members[0]
    for name in _MASK_MEMBERS:
        if f"{name}.npy" in members:
            return f"{name}.npy"
    raise BadInputError(path, f"cannot tell which array is the mask among {members}")


def _check_mask(path: Path, depth_shape: tuple[int, int, int]) -> str:
    if not path.is_file():
        raise BadInputError(path, "not a regular file (a directory or a broken link)")
    try:
        with zipfile.ZipFile(path) as archive:
            member = _mask_member(path, archive)
            with archive.open(member) as fp:
                shape, fortran, dtype = _npy_header(fp, path)
    except (
        OSError,
        EOFError,
        RuntimeError,
        zlib.error,
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
    ) as exc:
        raise BadInputError(path, f"not an .npz archive ({one_line(str(exc))})") from None
    if shape != depth_shape:
        raise BadInputError(path, f"mask shape {shape} differs from depth shape {depth_shape}")
    if dtype not in (np.dtype(np.bool_), np.dtype(np.uint8)) or fortran:
        raise BadInputError(path, f"mask must be a C-ordered bool array, got {dtype}")
    return member


def check_depth(path: Path, frames: int, mask: Path | None) -> DepthSpec:
    """Header-only check of ``depth_metric.npy`` (and its mask): values are read while streaming."""
    arr = load_npy(path, mmap=True)
    if arr.ndim != 3 or min(arr.shape[1:], default=0) <= 0:
        raise BadInputError(path, f"shape {arr.shape}, expected ({frames}, h, w) metric depth")
    if not np.issubdtype(arr.dtype, np.floating):
        raise BadInputError(path, f"dtype {arr.dtype}, expected float32")
    if arr.shape[0] != frames:
        raise BadInputError(path, f"{arr.shape[0]} depth maps for {frames} frames")
    shape = (int(arr.shape[0]), int(arr.shape[1]), int(arr.shape[2]))
    del arr
    member = _check_mask(mask, shape) if mask is not None else None
    return DepthSpec(path, shape, mask, member)


def load_sidecars(directory: Path, frames: int) -> Sidecars:
    """Whatever of the ViPE-layout sidecars ``directory`` holds, validated for ``frames`` frames.

    A mask without a depth map is ignored (there is nothing for it to qualify). A sidecar name
    that is present but unusable (wrong shape, NaN poses, non-finite intrinsics, a folder, a
    broken link) is never silently absent, nor a reason to refuse the whole episode: it is left
    out, and its defect is kept in ``problems`` so the metrics that need it say ``missing``
    with the reason, the others are scored, and the command reports it and exits 2.
    No mask file means every finite depth is valid (how our recordings store depth: +inf where
    there is none); a mask archive that holds no mask array, or the wrong one, is a problem.
    """
    poses_path, k_path, depth_path = directory / POSES, directory / INTRINSICS, directory / DEPTH
    mask_path = directory / DEPTH_MASK
    problems: list[SidecarProblem] = []

    def attempt(path: Path, spoils: str, load: Any) -> Any:
        if not present(path):
            return None
        try:
            return load()
        except BadInputError as exc:
            problems.append(SidecarProblem(path, exc.problem, spoils))
            return None

    poses = attempt(poses_path, POSES_KIND, lambda: load_poses(poses_path, frames))
    intrinsics = attempt(k_path, DEPTH_KIND, lambda: load_intrinsics(k_path, frames))
    depth = None
    if present(depth_path):
        depth = attempt(depth_path, DEPTH_KIND, lambda: check_depth(depth_path, frames, None))
        if depth is not None and present(mask_path):
            depth = attempt(
                mask_path, DEPTH_KIND, lambda: check_depth(depth_path, frames, mask_path)
            )
    return Sidecars(frames, poses, intrinsics, depth, tuple(problems))


class DepthReader:
    """Reads depth frames in order: a memory-mapped array plus a streamed, decompressed mask."""

    def __init__(self, spec: DepthSpec) -> None:
        self.spec = spec
        self._depth = np.load(spec.path, mmap_mode="r", allow_pickle=False)
        self._next = 0
        self._archive: zipfile.ZipFile | None = None
        self._mask: IO[bytes] | None = None
        if spec.mask_path is not None and spec.mask_member is not None:
            self._archive = zipfile.ZipFile(spec.mask_path)
            self._mask = self._archive.open(spec.mask_member)
            _npy_header(self._mask, spec.mask_path)

    def frame(self, index: int) -> npt.NDArray[np.float32]:
        """Depth of frame ``index`` (frames must be read 0, 1, 2, ...), NaN where invalid."""
        if index != self._next:
            raise ValueError(f"depth frames are read in order: asked {index}, next {self._next}")
        self._next += 1
        _, h, w = self.spec.shape
        depth = np.array(self._depth[index], dtype=np.float32)
        if self._mask is not None and self.spec.mask_path is not None:
            raw = self._mask.read(h * w)
            if len(raw) != h * w:
                raise DepthFrameError(f"{self.spec.mask_path}: mask ends before frame {index}")
            depth[np.frombuffer(raw, dtype=np.uint8).reshape(h, w) == 0] = np.nan
        return depth

    def close(self) -> None:
        if self._mask is not None:
            self._mask.close()
        if self._archive is not None:
            self._archive.close()
        self._mask = self._archive = None

"""The episode cache on disk (``core/episode/cache.py``'s ``EpisodeCache``): what perception
produced, and all that ``rescore`` needs.

Perceive once, score many: every score is a kernel over this cache. Arrays are stored
uncompressed in ``.npz`` (bit-exact round trip); ``episode.json`` holds the rest. The only
frames are Q-Align's, at 1 fps (``quality_cache``): about 210 KiB per second as PNG at
640×432 (25 MB for a two-minute episode); everything else is a few hundred kB.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.constants import EQUAL_SPLIT_KEYS
from streameval.core.atomic import savez_atomic, write_json_atomic
from streameval.core.episode.cache import EpisodeCache, MemoryCache
from streameval.core.episode.geometry import FrameGeometry
from streameval.core.episode.motion import FitSample
from streameval.errors import BadInputError
from streameval.inputs.arrays import depth_problem, intrinsics_problem, pose_problem
from streameval.inputs.jsonfile import read_json_object
from streameval.inputs.npz import load_npz, member, scalar_flag
from streameval.inputs.numbers import FPS
from streameval.inputs.paths import present
from streameval.protocol.keys import KEYS, NO_KEY
from streameval.results.cache.quality import load_quality, save_quality
from streameval.results.cache.timing import CACHE_FILE as TIMING_FILE
from streameval.results.cache.timing import load_timing, save_timing
from streameval.results.cache.worldatlas import CACHE_FILE as WORLDATLAS_FILE
from streameval.results.cache.worldatlas import load_worldatlas, save_worldatlas

CACHE_FORMAT = "streameval.results.cache.episode/1"

_CACHE_KEYS = frozenset((*KEYS, NO_KEY))
_MAX_FLOW_PX = 1e6


MEMORY_FILE = "memory.npz"


def save_memory(memory: MemoryCache, path: Path) -> None:
    """Write the memory metrics' inputs to the archive ``path``."""
    k = len(memory.views)
    arrays: dict[str, Any] = {
        "has_embeddings": np.array(memory.embeddings is not None),
        "embeddings": (
            memory.embeddings if memory.embeddings is not None else np.zeros((0, 0), np.float32)
        ),
        "has_cuts": np.array(memory.cuts is not None),
        "cuts": np.array(memory.cuts or [], dtype=np.int64),
        "view_frames": np.array([v.frame for v in memory.views], dtype=np.int64),
        "view_poses": np.array([v.pose for v in memory.views], dtype=np.float64).reshape(k, 4, 4),
        "view_intrinsics": np.array([v.intrinsics for v in memory.views], dtype=np.float64).reshape(
            k, 3, 3
        ),
        "view_image_sizes": np.array([v.image_size for v in memory.views], dtype=np.int64).reshape(
            k, 2
        ),
    }
    for j, v in enumerate(memory.views):  # depth maps may differ in size between views
        arrays[f"view_depth_{j}"] = np.asarray(v.depth, dtype=np.float32)
    savez_atomic(path, arrays)


def load_memory(path: Path, frames: int) -> MemoryCache:
    """Read and check ``memory.npz`` of an episode of ``frames`` frames."""
    data = load_npz(path)
    view_frames = member(data, "view_frames", path, ndim=1, kind="iu")
    k = len(view_frames)
    poses = member(data, "view_poses", path, ndim=3, kind="f", trailing=(4, 4))
    intrinsics = member(data, "view_intrinsics", path, ndim=3, kind="f", trailing=(3, 3))
    sizes = member(data, "view_image_sizes", path, ndim=2, kind="iu", trailing=(2,))
    if not len(poses) == len(intrinsics) == len(sizes) == k:
        raise BadInputError(path, f"view arrays disagree on the number of views ({k})")
    if k and not (view_frames.min() >= 0 and view_frames.max() < frames):
        raise BadInputError(path, f"view frames outside 0..{frames - 1}")
    if k and sizes.min() < 1:
        raise BadInputError(path, "view image sizes must be positive")
    for j in range(k):
        why = pose_problem(poses[j]) or intrinsics_problem(intrinsics[j])
        if why is not None:
            raise BadInputError(path, f"view {j}: {why}")
    depths = [member(data, f"view_depth_{j}", path, ndim=2, kind="fiu") for j in range(k)]
    for j, depth in enumerate(depths):
        why = depth_problem(depth)
        if why is not None:
            raise BadInputError(path, f"view {j}: depth {why}")
    views = [
        FrameGeometry(
            int(view_frames[j]),
            poses[j],
            depths[j],
            intrinsics[j],
            (int(sizes[j][0]), int(sizes[j][1])),
        )
        for j in range(k)
    ]
    embeddings = member(data, "embeddings", path, ndim=2, kind="f")
    has_embeddings = scalar_flag(data, "has_embeddings", path)
    if has_embeddings and (embeddings.shape[0] != frames or embeddings.shape[1] < 1):
        raise BadInputError(path, f"embeddings shape {embeddings.shape}, expected ({frames}, dim)")
    cuts = member(data, "cuts", path, ndim=1, kind="iu")
    has_cuts = scalar_flag(data, "has_cuts", path)
    if has_cuts and cuts.size:
        ordered = bool(np.all(np.diff(cuts) > 0))
        if not ordered or cuts.min() < 0 or cuts.max() > frames:
            raise BadInputError(path, f"cut indices must rise strictly within 0..{frames}")
    return MemoryCache(
        embeddings=embeddings if has_embeddings else None,
        cuts=[int(c) for c in cuts] if has_cuts else None,
        views=views,
    )


def save_episode_cache(cache: EpisodeCache, directory: Path) -> None:
    """Write ``cache`` into the folder ``directory`` (``episode.json`` last, so that a cache
    without it was not finished)."""
    directory.mkdir(parents=True, exist_ok=True)
    frames = np.array([s.frame for s in cache.fit_samples], dtype=np.int64)
    sizes = np.array([s.u.size for s in cache.fit_samples], dtype=np.int64)
    has_depth = np.array([s.invz is not None for s in cache.fit_samples], dtype=bool)
    derotated = np.array([s.derotated for s in cache.fit_samples], dtype=bool)

    def cat(parts: list[npt.NDArray[np.float32]]) -> npt.NDArray[np.float32]:
        return np.concatenate(parts) if parts else np.zeros(0, np.float32)

    invz = cat(
        [
            s.invz if s.invz is not None else np.full(s.u.size, np.nan, np.float32)
            for s in cache.fit_samples
        ]
    )
    arrays: dict[str, Any] = {
        "sx": cache.sx,
        "srad": cache.srad,
        "frame_keys": np.array(cache.frame_keys, dtype="<U1"),
        "fit_frames": frames,
        "fit_sizes": sizes,
        "fit_has_depth": has_depth,
        "fit_derotated": derotated,
        "fit_x": cat([s.x for s in cache.fit_samples]),
        "fit_y": cat([s.y for s in cache.fit_samples]),
        "fit_u": cat([s.u for s in cache.fit_samples]),
        "fit_v": cat([s.v for s in cache.fit_samples]),
        "fit_invz": invz,
    }
    savez_atomic(directory / "signals.npz", arrays)
    if cache.memory is not None:
        save_memory(cache.memory, directory / MEMORY_FILE)
    if cache.worldatlas is not None:
        save_worldatlas(cache.worldatlas, directory / WORLDATLAS_FILE)
    if cache.quality is not None:
        save_quality(cache.quality, directory)
    if cache.timing is not None:
        save_timing(cache.timing, directory / TIMING_FILE)
    write_json_atomic(directory / "episode.json", {"format": CACHE_FORMAT, **cache.meta})


def load_episode_cache(directory: Path) -> EpisodeCache:
    """Read and check the cache folder ``directory``; a damaged or foreign file is one
    ``BadInputError`` naming it."""
    meta_path = directory / "episode.json"
    npz_path = directory / "signals.npz"
    for p in (meta_path, npz_path):
        if not p.is_file():
            raise BadInputError(p, "missing episode cache file (was this episode finished?)")
    meta = check_cache_meta(read_json_object(meta_path), meta_path)
    data = load_npz(npz_path)
    sx = member(data, "sx", npz_path, ndim=1, kind="f")
    srad = member(data, "srad", npz_path, ndim=1, kind="f")
    keys = member(data, "frame_keys", npz_path, ndim=1, kind="U")
    if len(sx) != len(srad) or len(sx) > len(keys):
        raise BadInputError(npz_path, f"{len(sx)} sx, {len(srad)} srad for {len(keys)} frames")
    for name, signal in (("sx", sx), ("srad", srad)):
        # NaN marks a gap; a mean flow beyond 1e6 px per frame (or inf) is not a measurement
        if np.any(np.abs(np.where(np.isnan(signal), 0.0, signal)) > _MAX_FLOW_PX):
            raise BadInputError(npz_path, f"{name} holds values beyond ±{_MAX_FLOW_PX:g} px")
    bad_keys = set(keys.tolist()) - _CACHE_KEYS
    if bad_keys:
        raise BadInputError(npz_path, f"unknown keys {sorted(bad_keys)[:5]} in frame_keys")
    fit_frames = member(data, "fit_frames", npz_path, ndim=1, kind="iu")
    fit_sizes = member(data, "fit_sizes", npz_path, ndim=1, kind="iu")
    fit_depth = member(data, "fit_has_depth", npz_path, ndim=1, kind="b")
    points = [member(data, f"fit_{c}", npz_path, ndim=1, kind="f") for c in "xyuv"]
    invz = member(data, "fit_invz", npz_path, ndim=1, kind="f")
    # absent from caches perceived before derotation (docs/methods.md#motion-type-fit)
    fit_derotated = (
        member(data, "fit_derotated", npz_path, ndim=1, kind="b")
        if "fit_derotated" in data
        else np.zeros(len(fit_frames), dtype=bool)
    )
    if not len(fit_frames) == len(fit_sizes) == len(fit_depth) == len(fit_derotated):
        raise BadInputError(
            npz_path, "fit_frames, fit_sizes, fit_has_depth, fit_derotated differ in length"
        )
    n_stored = len(points[0])
    # each size counts points of fit_x..fit_invz: 0 up to all of them. Checked one by one
    # and summed as Python ints, so that no size wraps around in int64 / uint64 arithmetic
    sizes = [int(n) for n in fit_sizes.tolist()]
    for i, size in enumerate(sizes):
        if not 0 <= size <= n_stored:
            raise BadInputError(
                npz_path,
                f"fit_sizes[{i}] is {size} (expected 0 to {n_stored}, the points in fit_x)",
            )
    n_points = sum(sizes)
    if any(len(a) != n_points for a in (*points, invz)):
        raise BadInputError(npz_path, f"fit point arrays do not hold {n_points} points")
    if fit_frames.size and not (fit_frames.min() >= 0 and fit_frames.max() < len(keys)):
        raise BadInputError(npz_path, f"fit frames outside 0..{len(keys) - 1}")
    samples: list[FitSample] = []
    offset = 0
    for frame, size, depth, turned in zip(fit_frames, sizes, fit_depth, fit_derotated, strict=True):
        sl = slice(offset, offset + size)
        offset += size
        samples.append(
            FitSample(
                frame=int(frame),
                x=data["fit_x"][sl],
                y=data["fit_y"][sl],
                u=data["fit_u"][sl],
                v=data["fit_v"][sl],
                invz=data["fit_invz"][sl] if bool(depth) else None,
                derotated=bool(turned),
            )
        )
    memory_path = directory / MEMORY_FILE
    atlas_path = directory / WORLDATLAS_FILE
    timing_path = directory / TIMING_FILE
    return EpisodeCache(
        meta=meta,
        frame_keys=[str(k) for k in keys],
        sx=sx.astype(np.float64, copy=False),
        srad=srad.astype(np.float64, copy=False),
        fit_samples=samples,
        memory=load_memory(memory_path, len(keys)) if present(memory_path) else None,
        worldatlas=load_worldatlas(atlas_path, len(keys)) if present(atlas_path) else None,
        quality=load_quality(directory),
        timing=load_timing(timing_path, len(keys)) if present(timing_path) else None,
    )


def check_cache_meta(meta: dict[str, Any], path: Path) -> dict[str, Any]:
    """``episode.json`` fields that scoring and ``scores.json`` rely on; returns it without
    ``format``. ``"complete": "yes"`` is refused, not copied into scores.json."""
    if meta.pop("format", None) != CACHE_FORMAT:
        raise BadInputError(path, f"not a {CACHE_FORMAT} episode cache")
    FPS.check(meta.get("fps"), path)
    for name in ("model", "suite", "episode"):
        value = meta.get(name)
        if not isinstance(value, str) or not value:
            raise BadInputError(path, f"{name!r} must be a non-empty string, got {value!r}")
    if not isinstance(meta.get("complete", True), bool):
        raise BadInputError(path, f"'complete' must be true or false, got {meta['complete']!r}")
    for name in ("interactivity", "provenance", "memory"):
        if not isinstance(meta.get(name, {}), dict):
            raise BadInputError(path, f"{name!r} must be an object")
    errors = meta.get("errors", [])
    if not isinstance(errors, list) or not all(isinstance(e, str | dict) for e in errors):
        raise BadInputError(path, "'errors' must be a list of error records")
    split = meta.get(EQUAL_SPLIT_KEYS)
    if split is not None and not (
        isinstance(split, list) and split and all(isinstance(k, str) and k in KEYS for k in split)
    ):
        wanted = "a non-empty list of keys (W S A D L R)"
        raise BadInputError(path, f"{EQUAL_SPLIT_KEYS!r} must be {wanted}, got {split!r}")
    return meta

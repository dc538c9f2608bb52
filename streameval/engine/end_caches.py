"""The caches an episode's end gathers for scoring: the memory metrics' inputs (after the cut
detector's last windows) and the quality metrics' 1-fps frames and ratings.

Why their own module: both wait off the event loop for a worker that may be slow or gone (the
TransNetV2 process, a quality network), and an interrupted run bounds the first wait; the
pipeline only calls them when the episode ends.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streameval.core.episode.cache import MemoryCache
from streameval.core.episode.quality import QualityCache, QualityRatings
from streameval.core.events import EpisodeInfo, ErrorEvent
from streameval.engine.track import EpisodeTrack
from streameval.metrics.quality.kernels import one_fps_frames
from streameval.perception.qalign import rate_episode

if TYPE_CHECKING:
    from streameval.perception.memory import MemoryPerception
    from streameval.perception.qalign import QAlign

ReportError = Callable[[ErrorEvent], None]  # the episode's error channel

INTERRUPTED_CUT_WAIT_S = 2.0
"""How long an interrupted episode waits for a cut detector that can bound its wait."""


def _parameters(fn: Any) -> set[str]:
    """The parameter names of ``fn`` (none when its signature cannot be read)."""
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


async def memory_cache_of(
    memory: MemoryPerception | None,
    track: EpisodeTrack,
    info: EpisodeInfo,
    error: ReportError,
    *,
    interrupted: bool = False,
) -> tuple[MemoryCache | None, dict[str, Any]]:
    """Wait for the cut detector (off the loop: TransNetV2 finishes its last windows) and
    gather what the memory metrics need. ``interrupted``: a detector that can bound its wait
    (``finish(timeout_s=)``, TransNetV2's worker process) gets ``INTERRUPTED_CUT_WAIT_S``: a
    worker still loading its model on a busy machine took 10–40 s, and an interrupted run
    must end within seconds; its episode's Local Memory then says it was interrupted."""
    if memory is None:
        return None, {}
    cuts: list[int] | None = None
    failure = memory.failure
    detector = memory.cut_detector
    cut_interrupted = False
    if detector is not None:
        try:
            if failure is None:
                bounded = interrupted and "timeout_s" in _parameters(detector.finish)
                if bounded:
                    cuts = await asyncio.to_thread(
                        detector.finish,  # type: ignore[call-arg]
                        timeout_s=INTERRUPTED_CUT_WAIT_S,
                    )
                    cut_interrupted = cuts is None
                else:
                    cuts = await asyncio.to_thread(detector.finish)
                if cuts is None:
                    failure = getattr(detector, "failure", None) or f"{detector.name} failed"
                    # the metric says why it is missing; the error channel says it happened
                    error(
                        ErrorEvent(
                            f"cut detector {detector.name}: {failure}", source="cut_detector"
                        )
                    )
        finally:
            detector.close()
    n_frames = len(track.frame_keys)
    embeddings = track.embeddings.view(n_frames)
    views = [memory.geometries[f] for f in sorted(memory.geometries) if f < n_frames]
    geometry_source = str(info.extra.get("depth_source", "model")) if views else None
    meta = {
        "embedding": memory.embedder.name if memory.embedder else None,
        "embedding_calibration": (
            memory.embedder.calibration.to_json() if memory.embedder else None
        ),
        "cut_detector": detector.name if detector else None,
        "cut_failure": failure,
        **({"cut_interrupted": True} if cut_interrupted else {}),
        "geometry_source": geometry_source,
    }
    problems = info.extra.get("sidecar_problems")
    if not views and isinstance(problems, dict) and problems:
        # the geometry was there but unusable: Global Memory is missing, not inapplicable
        meta["global_missing"] = "unusable sidecar: " + "; ".join(map(str, problems.values()))
    return MemoryCache(embeddings, cuts, views), meta


async def quality_cache_of(
    track: EpisodeTrack, info: EpisodeInfo, backend: QAlign | None, error: ReportError
) -> QualityCache:
    """The 1-fps frames (trimmed as Q-Align samples them), the imaging statistics, and, with
    a quality backend, its answers (off the loop: a model forward pass per task and segment)."""
    n_frames = len(track.frame_keys)
    wanted = one_fps_frames(n_frames, info.fps)
    frames = {i: track.quality_frames[i] for i in wanted if i in track.quality_frames}
    quality = QualityCache(frames, track.statistics.view(n_frames))
    if backend is None:
        return quality
    if len(frames) < len(wanted) or not frames:
        quality.failure = f"{len(frames)} of {len(wanted)} 1-fps frames received"
        return quality
    ordered = [frames[i] for i in sorted(frames)]
    try:
        logits, segments = await asyncio.to_thread(rate_episode, backend, ordered)
    except Exception as exc:  # the quality columns become `missing`, with this reason
        quality.failure = f"{backend.name}: {type(exc).__name__}: {exc}"
        error(ErrorEvent(f"quality backend failed: {quality.failure}", source="quality"))
        return quality
    quality.ratings = QualityRatings(backend.name, logits, segments)
    return quality

"""The asyncio pipeline of one episode: source → perception → online metrics → observers.

One ``TaskGroup`` per episode: the reader pulls events from the source (decode or network
happen there) into the bounded queue of the perception thread (``perception/worker.py``),
which runs flow and the memory backends; the other task applies its results to the track
and the observers. Decoding and perception overlap on the two cores. When perception falls
behind, a live source's frames are dropped (counted, shown, kept as NaN gaps); replay and
in-process sources wait instead.
End of stream = flush the queue, then finalize: the cache is written and the same kernels
that ``rescore`` runs produce the final scores.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from streameval.cases.episode import CASE_KEY, FirstFrameCheck, case_record_of
from streameval.constants import EQUAL_SPLIT_KEYS
from streameval.core.episode.motion import FitSample
from streameval.core.events import (
    RESPONSE_HINT_KEY,
    EpisodeEnd,
    EpisodeInfo,
    EpisodeStart,
    ErrorEvent,
    FrameEvent,
)
from streameval.core.observers import EpisodeObserver, EpisodeOutcome, Progress
from streameval.core.source import Source
from streameval.core.version import __version__
from streameval.engine.backends import create_backend
from streameval.engine.cadence_watch import cadence_warning, planned_cadence_warning
from streameval.engine.closed_loop_frames import closed_loop_provenance, keep_revisit_frames
from streameval.engine.config import PipelineConfig
from streameval.engine.end_caches import memory_cache_of, quality_cache_of
from streameval.engine.episode_stats import EpisodeStats, fps_mismatch, session_kind
from streameval.engine.keys_contradicted import KeyTypeWatch
from streameval.engine.keys_ignored import MESSAGE as KEYS_IGNORED
from streameval.engine.keys_ignored import KeysIgnoredWatch
from streameval.engine.perception_plan import (
    PerceptionPlan,
    fit_frames_wanted,
    plan_for,
    settled,
    with_dropped,
)
from streameval.engine.provisional import LiveScores
from streameval.engine.scoring import episode_document, score_episode
from streameval.engine.source_reader import read_source
from streameval.engine.track import EpisodeTrack, WorldAtlasTrack, trajectory_of
from streameval.errors import EpisodeNotStarted, StreamevalError
from streameval.metrics.fits.camera import (
    DEFAULT_CAMERA,
    Camera,
    camera_after_frame,
    case_camera,
)
from streameval.metrics.fits.motion_type import DEPTH_FREE_METHOD
from streameval.metrics.runtime import runtime_block
from streameval.metrics.segments import equal_split_keys
from streameval.metrics.short_keys import schedule_short_keys
from streameval.perception.depth import DepthBackend
from streameval.perception.embedding import EmbeddingBackend
from streameval.perception.flow import FlowBackend, flow_provenance
from streameval.perception.gram import GramBackend
from streameval.perception.memory import (
    MemoryPerception,
    create_episode_cut_detector,
    resolve_cut_detector_name,
)
from streameval.perception.perceiver import Perceiver
from streameval.perception.qalign import QAlign
from streameval.perception.worker import Perceived, PerceptionWorker
from streameval.protocol.memory_loop import MEMORY_LOOP_SUITE
from streameval.results.cache.episode import save_episode_cache
from streameval.results.provenance import library_versions
from streameval.results.scores_file import write_scores


class _Episode:
    """The perceiving side of one episode."""

    def __init__(
        self,
        config: PipelineConfig,
        flow: FlowBackend,
        embedder: EmbeddingBackend | None,
        observers: list[EpisodeObserver],
        stats: EpisodeStats,
    ) -> None:
        self.config = config
        self.flow = flow
        self.embedder = embedder
        self.depth_backend: DepthBackend | None = None
        self.quality_backend: QAlign | None = None
        self.memory: MemoryPerception | None = None
        self.observers = observers
        self.stats = stats
        self.worker: PerceptionWorker | None = None
        self.perceiver: Perceiver | None = None  # made and used by the perception threads
        self.start_errors: list[ErrorEvent] = []
        self.info: EpisodeInfo | None = None
        self.track: EpisodeTrack | None = None
        self.end: EpisodeEnd | None = None
        self.last_provisional = 0.0
        self.live: LiveScores | None = None
        self.plan = PerceptionPlan(frozenset(), frozenset())  # set by make_perceiver
        self.depth_sources: set[str] = set()
        self.gram_backend: GramBackend | None = None  # memory_loop rendering recovery
        self.keys_watch = KeysIgnoredWatch()
        self.type_watch = KeyTypeWatch()
        self.cadence_said = False  # engine/cadence_watch.py: said at most once
        self.camera: Camera = DEFAULT_CAMERA  # metrics.fits.camera: the case's, then the model's
        # a benchmark case's episode: did the first frames start from its image?
        self.first_frames: FirstFrameCheck | None = None

    def make_perceiver(self, start: EpisodeStart) -> Perceiver:
        """Build the episode's perceiver (runs in the perception thread, which owns it)."""
        info = start.info
        detector = None
        if self.config.cuts:
            try:
                detector = create_episode_cut_detector(self.config.cuts, info.fps)
            except Exception as exc:  # local memory becomes `missing`, with this reason
                self.start_errors.append(
                    ErrorEvent(
                        f"cut detector {self.config.cuts!r} unavailable: {exc}",
                        source="cut_detector",
                    )
                )
        self.plan = plan_for(info)
        self.memory = MemoryPerception(self.embedder, detector, self.plan.views)
        if self.config.cuts and detector is None:
            self.memory.failure = f"{self.config.cuts} could not start"
        self.perceiver = Perceiver(
            self.flow,
            self.plan.fit_frames,
            self.config.analysis_width,
            self.config.analysis_height,
            self.memory,
            self.depth_backend if self.plan.fit_depth_network else None,
            fps=info.fps,
            imaging=self.config.imaging,
            keep_quality_frames=self.config.quality_frames or bool(self.config.quality),
            fit_every_frame=self.plan.adaptive,
            camera=case_camera(info.extra.get(CASE_KEY)),
        )
        return self.perceiver

    def start(self, info: EpisodeInfo) -> None:
        self.info = info
        flow = self.flow
        self.track = EpisodeTrack(
            meta={
                "episode": info.episode,
                "model": info.model,
                "suite": info.suite,
                "fps": info.fps,
                "source": info.source,
                "width": info.width,
                "height": info.height,
                "analysis_width": self.config.analysis_width,
                "analysis_height": self.config.analysis_height,
                "backends": flow_provenance(flow),
            }
        )
        split = equal_split_keys(info.extra)
        if split is not None:
            self.track.meta[EQUAL_SPLIT_KEYS] = split
        # the geometry's camera (docs/methods.md#known-intrinsics): recorded only when stated,
        # so an episode without intrinsics keeps WorldMark's 70° and its cache as before
        self.camera = case_camera(info.extra.get(CASE_KEY))
        if self.camera.source != "default":
            self.track.meta["camera"] = self.camera.to_json()
        if info.suite == MEMORY_LOOP_SUITE:
            self.track.meta["trajectory"] = trajectory_of(info)
            problems = info.extra.get("sidecar_problems")
            self.track.worldatlas = WorldAtlasTrack(
                fps=info.fps, problems=dict(problems) if isinstance(problems, dict) else {}
            )
        self.live = LiveScores(self.track, info.fps)
        self.live.on_motion_type = self._motion_type_seen
        for error in self.start_errors:
            self.error(error)
        try:
            self.first_frames = FirstFrameCheck.for_episode(info.extra)
        except StreamevalError as exc:  # the case image went unreadable since the run began
            self.error(ErrorEvent(f"first-frame check: {exc}", source="conditioning"))
        # docs/methods.md#shortest-keys: said before the first frame, not found in the scores
        short = (
            None if info.suite == MEMORY_LOOP_SUITE or split else schedule_short_keys(info.schedule)
        )
        if short is not None:
            self.warn(short.line())
        if info.extra.get("live"):  # the server's cadence known in advance: said now
            planned = planned_cadence_warning(
                info.extra.get("interactivity", {}), info.extra.get(RESPONSE_HINT_KEY)
            )
            if planned is not None:
                self.cadence_said = True
                self.warn(planned)

    def _motion_type_seen(
        self,
        key: str,
        segment: int,
        p_yaw: float,
        amplitude: float,
        previous: str | None,
        sideways: bool,
    ) -> None:
        warning = self.type_watch.segment(key, segment, p_yaw, amplitude, previous, sideways)
        if warning is not None:
            self.warn(warning)

    def warn(self, message: str) -> None:
        """Something to check while the episode runs: every observer hears it."""
        assert self.info is not None
        for o in self.observers:
            o.on_warning(f"{self.info.source}: {message}")

    def error(self, error: ErrorEvent) -> None:
        """The episode's one error channel: every observer hears it, the outcome and
        scores.json keep it (observers report their own problems here through ``bind``)."""
        self.stats.errors.append(error)
        for o in self.observers:
            o.on_error(error)

    def frame(self, done: Perceived) -> None:
        """Apply one perceived frame to the track and tell the observers (event loop)."""
        assert self.track is not None and self.info is not None
        event = done.event
        assert isinstance(event, FrameEvent)
        camera = camera_after_frame(self.camera, event.intrinsics, event.image.shape[1])
        if camera is not self.camera:  # the model states its camera (the perceiver saw it too)
            self.camera = camera
            self.track.meta["camera"] = camera.to_json()
        if done.output is None:
            self.stats.rejected += 1
            self.error(
                ErrorEvent(
                    f"{self.info.source}: {done.rejected}", source="perception", frame=event.index
                )
            )
            return
        out = done.output
        if self.first_frames is not None:
            warning = self.first_frames.add(event.index, event.image)
            if warning is not None:
                self.warn(warning)
        self.stats.perceive_s += done.seconds
        self.stats.recent.append(time.perf_counter())
        changed = self.track.set_frame_key(event.index, event.key, self._key_of)
        if changed and self.live is not None:
            self.live.key_changed(event.index)
        self.track.sx.extend(np.asarray(out.sx, dtype=np.float64))
        self.track.srad.extend(np.asarray(out.srad, dtype=np.float64))
        if out.embedding is not None:
            self.track.embeddings.set(event.index, out.embedding)
        if out.statistics is not None:
            self.track.statistics.set(event.index, out.statistics)
        if out.quality_frame is not None:
            self.track.quality_frames[event.index] = out.quality_frame
        if self.track.worldatlas is not None:
            from_sidecar = self.info.extra.get("depth_source") == "sidecar"
            self.track.worldatlas.add_frame(event, from_sidecar)
        if out.fit_sample is not None:  # an adaptive plan: the perceiver samples lat/yaw only
            self.track.fit_samples.append(out.fit_sample)
            if out.depth_used:
                self.track.depth_frames_used += 1
        if out.derotated_samples:  # picks of closed segments, their turn warped out now
            self._derotated(out.derotated_samples)
        keys = self.track.frame_keys
        if self.keys_watch.frame_keys_grew(keys, self.track.sx.view(), self.track.srad.view()):
            self.warn(KEYS_IGNORED)
        if self.plan.adaptive and len(keys) > 1 and keys[-1] != keys[-2]:
            self._prune_fit_samples(final=False)  # a segment closed: keep its picks
        if not self.cadence_said and len(self.stats.key_changes) > 1:
            self.cadence_said = True  # the first switch: the first response is known
            live = self.info.extra.get("interactivity", {}) if self.info.extra.get("live") else {}
            warning = cadence_warning(self.stats.key_changes, self.stats.arrivals, live)
            if warning is not None:
                self.warn(warning)
        if out.depth_used:
            source = (
                self.info.extra.get("depth_source", "model") if event.depth is not None else None
            )
            self.depth_sources.add(str(source or (self.config.depth or "network")))
        self._progress(event)

    def _prune_fit_samples(self, *, final: bool) -> None:
        """Keep the adaptive plan's samples still needed (``keep_fit_samples``), and tell the
        perceiver which picks are settled: it warps their turns out (``Perceiver.derotate``)."""
        assert self.track is not None and self.info is not None
        track = self.track
        picks, wanted = fit_frames_wanted(track.frame_keys, self.info.fps, final=final)
        kept = [s for s in track.fit_samples if s.frame in wanted]
        if not final and self.perceiver is not None:
            self.perceiver.derotate(picks, wanted)
        if track.replace_fit_samples(kept) and self.live is not None:
            self.live.fit_samples_replaced()

    def _derotated(self, samples: tuple[FitSample, ...]) -> None:
        """Put the perceiver's warped-out samples in place of their plain ones."""
        assert self.track is not None
        by_frame = {s.frame: s for s in samples}
        track = self.track
        track.fit_samples = [by_frame.get(s.frame, s) for s in track.fit_samples]
        if self.live is not None:
            self.live.fit_samples_replaced()

    def derotate_final_picks(self) -> None:
        """At the end, the perception threads done: the final picks whose turn is still to
        warp out (their segments settled with the last frames) are warped out here. Not
        while the flow thread still runs (it outlived its join when cancelled): the flow
        backend is that thread's, and those picks keep their plain samples."""
        if not self.plan.adaptive or self.perceiver is None or self.track is None:
            return
        if self.worker is not None and self.worker.running():
            return
        assert self.info is not None
        picks, _ = fit_frames_wanted(self.track.frame_keys, self.info.fps, final=True)
        done = self.perceiver.derotate_now(picks)
        if done:
            self._derotated(done)

    def pad_dropped_tail(self) -> None:
        """Frames dropped after the last one perceived still belong to the episode."""
        assert self.track is not None
        tail = [i for i in self.stats.dropped_frames if i >= len(self.track.frame_keys)]
        if tail:
            self.track.pad_to(max(tail) + 1, self._key_of)

    def settle_plan(self) -> None:
        """At the end: an adaptive plan becomes the picks of the frames that arrived (what
        scoring reads and the recording keeps), and only their samples stay."""
        if self.plan.adaptive and self.track is not None and self.info is not None:
            self._prune_fit_samples(final=True)
            self.plan = settled(self.plan, self.track.frame_keys, self.info.fps)

    def _key_of(self, index: int) -> str:
        """The key of a frame perception never saw: its own when it was received and dropped
        (the recording has it too), else the schedule's (a rejected or missing frame)."""
        assert self.info is not None
        return self.stats.dropped_keys.get(index) or self.info.schedule.key_for_frame(index)

    def _progress(self, event: FrameEvent) -> None:
        assert self.track is not None and self.info is not None
        now = time.perf_counter()
        provisional = None
        if now - self.last_provisional >= self.config.provisional_every_s:
            self.last_provisional = now
            # incremental: the cost of an update does not grow with the episode
            provisional = self.live.compute() if self.live is not None else None
        recent = self.stats.recent
        fps = (len(recent) - 1) / (recent[-1] - recent[0]) if len(recent) > 1 else 0.0
        sx, srad = self.track.sx.last(), self.track.srad.last()
        progress = Progress(
            info=self.info,
            frame=event.index,
            key=event.key,
            sx=None if sx is None or math.isnan(sx) else sx,
            srad=None if srad is None or math.isnan(srad) else srad,
            frames_done=len(self.track.frame_keys),
            frames_total=self.info.schedule.total_frames,
            fps=fps,
            queue_depth=self.worker.qsize() if self.worker is not None else 0,
            dropped=self.stats.dropped,
            provisional=provisional,
        )
        for o in self.observers:
            o.on_progress(progress)

    def interactivity(self) -> dict[str, Any]:
        return self.stats.interactivity(self.info, self.track)


def provenance(
    config: PipelineConfig, backends: dict[str, str], source: str | None = None
) -> dict[str, Any]:
    """Backends, versions, config, the source and when: written into every results file."""
    return {
        "streameval": __version__,
        "backends": backends,
        "versions": library_versions(),
        "config": asdict(config),
        "source": source,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


async def run_episode(
    source: Source,
    *,
    config: PipelineConfig | None = None,
    results_dir: Path | None = None,
    observers: list[EpisodeObserver] | None = None,
) -> EpisodeOutcome:
    """Evaluate one episode from ``source``; write ``results_dir`` if given.

    Cancellation (Ctrl-C, ``q`` in the dashboard) still finalizes what was received, marked
    incomplete: an episode in progress is never lost.
    """
    config = config or PipelineConfig()
    observers = observers or []
    stats = EpisodeStats()
    if config.opencv_threads is not None:
        import cv2

        cv2.setNumThreads(config.opencv_threads)
    # Backends are created before anything runs: an unknown or unavailable backend is the
    # caller's error to report, not a crash inside the task group.
    flow = create_backend("flow", config)
    embedder = create_backend("embedding", config)
    if config.cuts:
        from streameval.perception.cuts import CUT_DETECTORS

        CUT_DETECTORS.resolve(resolve_cut_detector_name(config.cuts))
    episode = _Episode(config, flow, embedder, observers, stats)
    for o in observers:
        o.bind(episode.error)
    episode.depth_backend = create_backend("depth", config)
    episode.quality_backend = create_backend("quality", config)
    episode.gram_backend = create_backend("gram", config)
    worker = PerceptionWorker(asyncio.get_running_loop(), episode.make_perceiver, config.queue_size)
    episode.worker = worker
    cancelled = False

    async def apply_results() -> None:
        while True:
            done = await worker.results.get()
            if done is None:
                return
            event = done.event
            if isinstance(event, EpisodeStart):
                episode.start(event.info)
            elif isinstance(event, FrameEvent):
                if episode.info is None:
                    raise RuntimeError("source sent a frame before EpisodeStart")
                episode.frame(done)
            elif isinstance(event, ErrorEvent):
                episode.error(event)
            elif isinstance(event, EpisodeEnd):
                episode.end = event

    try:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(read_source(source, worker, observers, stats))
            tg.create_task(apply_results())
    except asyncio.CancelledError:
        cancelled = True
        worker.stop()
    finally:
        with contextlib.suppress(Exception):
            await source.close()
    # the thread has posted its last result (or was stopped): nobody else touches the episode
    await asyncio.to_thread(worker.join, 5.0)
    if cancelled and episode.info is None and stats.info is not None:
        episode.start(stats.info)  # cancelled before perception saw the start: still kept
    if episode.info is None or episode.track is None:
        if cancelled:  # nothing was received: nothing to finalize
            raise asyncio.CancelledError
        raise EpisodeNotStarted(f"source {source!r} ended before EpisodeStart")
    complete = (
        not cancelled and episode.end is not None and episode.end.complete and not stats.rejected
    )
    outcome = await finalize(episode, complete, results_dir, interrupted=cancelled)
    if (mismatch := fps_mismatch(outcome.interactivity, episode.info.fps)) is not None:
        episode.warn(mismatch)
    for o in observers:
        o.on_end(outcome)
    if cancelled:
        raise asyncio.CancelledError
    return outcome


async def finalize(
    episode: _Episode, complete: bool, results_dir: Path | None, *, interrupted: bool = False
) -> EpisodeOutcome:
    """Flush is done: build the cache, score it with the shared kernels, write results.
    ``interrupted``: the run was cancelled (SIGINT, SIGTERM); nothing slow is waited for."""
    assert episode.track is not None and episode.info is not None
    track = episode.track
    episode.pad_dropped_tail()
    info = episode.info
    memory_cache, memory_meta = await memory_cache_of(
        episode.memory, track, info, episode.error, interrupted=interrupted
    )
    quality_cache = await quality_cache_of(track, info, episode.quality_backend, episode.error)
    atlas = track.worldatlas
    if atlas is not None:  # memory_loop: the revisit pairs' frames, features, Gram distances
        atlas.closed_loop = await asyncio.to_thread(
            keep_revisit_frames,
            atlas,
            len(track.frame_keys),
            episode.info.fps,
            episode.embedder,
            episode.gram_backend,
        )
    depth_source = ",".join(sorted(episode.depth_sources)) if track.depth_frames_used else "none"
    backends = {
        **track.meta["backends"],
        "motion_type": "depth_parallax" if track.depth_frames_used else DEPTH_FREE_METHOD,
        "embedding": memory_meta.get("embedding"),
        "cut_detector": memory_meta.get("cut_detector"),
        "global_geometry": memory_meta.get("geometry_source"),
        "quality": episode.quality_backend.name if episode.quality_backend else None,
        "imaging": "cpu-opencv" if episode.config.imaging else None,
        **(closed_loop_provenance(atlas.closed_loop) if atlas is not None else {}),
    }
    episode.stats.keys_ignored = episode.keys_watch.finish(
        track.frame_keys, track.sx.view(), track.srad.view()
    )
    interactivity = episode.interactivity()
    end_reason = episode.end.reason if episode.end else "source stopped"
    case = case_record_of(episode.info.extra)
    conditioning = None
    if episode.first_frames is not None:
        warning = episode.first_frames.finish()
        if warning is not None:
            episode.warn(warning)
        conditioning = episode.first_frames.record()
    meta = {
        "complete": complete,
        "end_reason": None if complete else (end_reason or "incomplete"),
        "depth_source": depth_source,
        "session": session_kind(episode.info.extra),  # what the real-time metrics may judge
        "memory": memory_meta,
        "interactivity": interactivity,
        "errors": [e.to_json() for e in episode.stats.errors],
        "provenance": {
            **provenance(episode.config, backends, episode.info.source),
            "depth_source": depth_source,
            "embedding_calibration": memory_meta.get("embedding_calibration"),
        },
    }
    if case is not None:  # a benchmark case's episode: scores.json says which, and whether
        meta["case"] = case  # the model started from its image
        meta["conditioning"] = conditioning
    await asyncio.to_thread(episode.derotate_final_picks)
    episode.settle_plan()
    cache = track.to_cache(meta, memory_cache)
    cache.quality = quality_cache
    cache.timing = episode.stats.timing(episode.info, len(track.frame_keys))
    scores = score_episode(cache)
    for warning in episode.type_watch.finish(cache, scores.motion_fits, interactivity):
        episode.warn(warning)
    runtime = runtime_block(cache)
    if runtime is not None and runtime["warning"]:
        episode.warn(runtime["warning"])
    if results_dir is not None:
        save_episode_cache(cache, results_dir / "cache")
        document = episode_document(cache.meta, scores, len(track.frame_keys), runtime)
        write_scores(results_dir, document)
    return EpisodeOutcome(
        info=episode.info,
        scores=scores,
        results_dir=results_dir,
        complete=complete,
        frames=len(track.frame_keys),
        errors=list(episode.stats.errors),
        interactivity=interactivity,
        runtime=runtime,
        perception=with_dropped(episode.plan, episode.stats.dropped_frames).to_json(),
        case=case,
        conditioning=conditioning,
    )

"""Provisional scores while an episode runs, without rebuilding the episode cache.

The pipeline used to rebuild the whole track into a cache and rescore it at every provisional
update, a cost that grew with the episode. Here the control columns come from
``IncrementalControl`` (amortised O(1) work per frame; see ``metrics/control/online.py`` for
which values are exact on the prefix and which are provisional), motion-type fits of closed
segments are computed once, and fit samples are indexed as they arrive. Other metrics
registered as ``live`` (``metrics/registry.py``) still run their kernel on a cache of the
prefix: correct, but O(episode) per update, until they get an incremental form of their own.
On memory_loop episodes the return gate's provisional state ('departure reached', 'returned',
with the frames where they happened) comes from ``metrics/worldatlas/gate_online.py``.

Final scores never come from here: ``score_episode`` runs the kernels over the finished cache,
so live == rescore == replay whatever the provisional values were.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from streameval.constants import ANALYSIS_WIDTH
from streameval.core.episode.motion import FitSample
from streameval.core.metric_result import MetricResult
from streameval.engine.keys_contradicted import moved_sideways
from streameval.engine.scoring import motion_fits
from streameval.engine.track import EpisodeTrack
from streameval.metrics.catalog import CONTROL_KERNEL
from streameval.metrics.control.kernels import MotionType
from streameval.metrics.control.online import IncrementalControl
from streameval.metrics.fits.camera import camera_of
from streameval.metrics.fits.motion_type import (
    fit_frames,
    fit_limit_settled,
    fit_motion_type,
)
from streameval.metrics.registry import ScoringInput, metric_specs, resolve_target
from streameval.metrics.segments import SegmentSpan
from streameval.metrics.worldatlas.gate_online import GATE_METRIC


class LiveScores:
    """Provisional values of every ``live`` metric of one episode (module docstring)."""

    def __init__(self, track: EpisodeTrack, fps: float) -> None:
        self.track = track
        self.fps = fps
        self.control = IncrementalControl(fps)
        self._width = int(track.meta.get("analysis_width", ANALYSIS_WIDTH))
        self._samples: dict[int, FitSample] = {}
        self._n_samples = 0
        self.on_motion_type: Callable[[str, int, float, float, str | None, bool], None] | None = (
            None
        )
        """Told (key, segment, p_yaw, turn + parallax amplitude, key before it, whether the
        picture moved sideways at the fit's frames) of each closed segment's motion type once
        its fit frames are settled (the contradicted-key watch, ``engine.keys_contradicted``):
        an open segment's fit covers only the moments after its switch, where a picture that
        trails the keys still shows the key before."""

    def fit_samples_replaced(self) -> None:
        """The track's fit samples were pruned (an adaptive plan): read them afresh."""
        self._samples = {}
        self._n_samples = 0

    def key_changed(self, frame: int) -> None:
        """The key of an already recorded ``frame`` was overwritten."""
        self.control.invalidate(frame)

    def _motion_type(self, span: SegmentSpan) -> MotionType | None:
        # as engine.scoring.motion_fits, for one segment
        wanted = fit_frames(span.start, span.end, self.fps, len(self.track.frame_keys))
        samples = [self._samples[f] for f in wanted if f in self._samples]
        focal = camera_of(self.track.meta).focal(self._width)  # known from the first frame
        fit = fit_motion_type(samples, focal, span.stable)
        if fit is None:
            return None
        kind = MotionType(p_trans=fit.p_trans, p_yaw=fit.p_yaw)
        keys = self.track.frame_keys
        closed = span.end < len(keys) and fit_limit_settled(span.start, span.end, len(keys))
        if self.on_motion_type is not None and closed and len(samples) == len(wanted):
            previous = keys[span.start - 1] if span.start else None
            sx = np.asarray(self.track.sx.view(), dtype=np.float64)
            srad = np.asarray(self.track.srad.view(), dtype=np.float64)
            side = moved_sideways(sx, srad, wanted)
            amplitude = fit.trans_amp + fit.rot_amp
            self.on_motion_type(span.key, span.index, fit.p_yaw, amplitude, previous, side)
        return kind

    def compute(self) -> dict[str, MetricResult]:
        track = self.track
        for sample in track.fit_samples[self._n_samples :]:
            self._samples[sample.frame] = sample
        self._n_samples = len(track.fit_samples)
        n_signals = max(0, len(track.frame_keys) - 2)  # as EpisodeTrack.to_cache
        sx = np.asarray(track.sx.view()[:n_signals], dtype=np.float64)
        srad = np.asarray(track.srad.view()[:n_signals], dtype=np.float64)
        outputs: dict[str, Mapping[str, MetricResult]] = {}
        metrics: dict[str, MetricResult] = {}
        prefix: ScoringInput | None = None
        for spec in metric_specs(live=True):
            if spec.kernel is None:
                continue
            if spec.kernel not in outputs:
                if spec.kernel == CONTROL_KERNEL:
                    outputs[spec.kernel] = self.control.compute(
                        sx, srad, track.frame_keys, self._motion_type
                    )
                else:
                    if prefix is None:
                        cache = track.to_cache()
                        prefix = ScoringInput(cache, motion_fits(cache), final=False)
                    outputs[spec.kernel] = resolve_target(spec.kernel)(prefix)
            out = outputs[spec.kernel]
            if spec.name in out:
                metrics[spec.name] = out[spec.name]
        atlas = track.worldatlas
        if atlas is not None and atlas.gate is not None:
            # memory_loop: the gate's 'departure reached' / 'returned' as they happen
            metrics[GATE_METRIC] = atlas.gate.progress().result()
        return metrics

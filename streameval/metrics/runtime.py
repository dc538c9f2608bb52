"""Runtime truth of a served session (scores.json ``runtime``; docs/methods.md#runtime): how
many frames the model generated, whether it kept real time, and how responsive it was.
Pure numpy kernels over the episode cache's arrays, so a live run, its replay and ``rescore``
give the same block.

The real-time verdict follows LiveFrame World (kkjcodes/liveframe, ``world/session.py``):
native frames per second in 10 s windows sliding by 1 s from the stream's start (one frame
interval before its first native frame; a frame at ``t`` counts in the window ``(a, a + 10]``;
a stream shorter than a window is one window of its whole span), and a stream is real-time
when it lasted at least 60 s, its worst window reached the target (16 fps unless
``--realtime-target``) and it never stalled (no gap longer than two chunks). Shorter streams
are "too short", never a pass. Quantiles are nearest-rank.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from streameval.constants import REALTIME_TARGET_FPS
from streameval.core.arrays import F64
from streameval.core.episode.cache import EpisodeCache
from streameval.metrics.interactivity import key_response_latencies
from streameval.metrics.native_frames import INTERPOLATED, NATIVE, REPEAT

DEFAULT_TARGET_FPS = REALTIME_TARGET_FPS
"""LiveFrame's real-time threshold: 16 native frames a second."""
MIN_STREAM_S = 60.0
"""A verdict needs a continuous stream at least this long (LiveFrame's 60 s)."""
WINDOW_S = 10.0
STEP_S = 1.0
"""Sustained-rate windows: 10 s long, sliding by 1 s (LiveFrame's)."""
COUNT_RESOLUTION = 2.0 / WINDOW_S
"""A window's rate is a count over 10 s, and each of its two edges can cut one frame of a
stream that runs exactly at the target when arrivals jitter (LiveFrame's backends emit on an
exact clock; served frames come through a network and an event loop): a worst window within
two frames of the target (0.2 fps) reaches it."""
STALL_CHUNKS = 2.0
"""A gap between native frames longer than two chunks' playing time is a stall (LiveFrame's
threshold between its chunk emissions)."""
MIN_STALL_CHUNK = 4
"""A server that paces frames one by one (no chunk seen) counts as chunks of this many
frames: a stall is a gap above 0.5 s at 16 fps, never one late frame's jitter."""
NON_NATIVE_WARN = 0.1
"""Above this share of repeated and interpolated frames, the run says so in one line."""
TOO_SHORT, PASS, FAIL = "too short", "pass", "fail"


def nearest_rank(values: Sequence[float] | F64, q: float) -> float | None:
    """The nearest-rank ``q`` quantile (None of nothing)."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    if v.size == 0:
        return None
    rank = max(1, math.ceil(q * v.size))
    return float(v[min(rank, v.size) - 1])


def sustained_windows(arrivals: F64, t0: float, window: float = WINDOW_S) -> F64:
    """Native fps of every ``window`` (s) sliding by ``STEP_S`` from ``t0`` until the last
    arrival; one window of the whole span when the stream is shorter (empty: no span)."""
    t = np.sort(arrivals[np.isfinite(arrivals)])
    if t.size == 0 or t[-1] <= t0:
        return np.zeros(0, dtype=np.float64)
    last = float(t[-1])
    if last - t0 <= window:
        return np.array([np.count_nonzero(t > t0) / (last - t0)], dtype=np.float64)
    anchors = t0 + STEP_S * np.arange(math.floor((last - t0 - window) / STEP_S) + 1)
    lo = np.searchsorted(t, anchors, side="right")  # first frame after the anchor
    hi = np.searchsorted(t, anchors + window, side="right")  # past the window's end
    return (hi - lo).astype(np.float64) / window


def stalls(arrivals: F64, threshold_s: float) -> tuple[int, float]:
    """Gaps between consecutive native frames longer than ``threshold_s``: count, seconds."""
    t = np.sort(arrivals[np.isfinite(arrivals)])
    gaps = np.diff(t)
    long = gaps[gaps > threshold_s]
    return int(long.size), float(long.sum())


def verdict(stream_s: float, worst_window: float | None, n_stalls: int, target: float) -> str:
    """``pass``, ``fail`` or ``too short`` (a stream under ``MIN_STREAM_S`` is never judged).
    The worst window may fall short of the target by ``COUNT_RESOLUTION`` (a frame at each of
    a window's edges: jitter can move one out of a stream that runs exactly at the target)."""
    if stream_s < MIN_STREAM_S or worst_window is None:
        return TOO_SHORT
    reached = worst_window >= target - COUNT_RESOLUTION - 1e-9
    return PASS if reached and n_stalls == 0 else FAIL


def intervals(times: F64) -> dict[str, float | None]:
    """p50/p95/max of the gaps between consecutive times, seconds."""
    t = np.sort(times[np.isfinite(times)])
    gaps = np.diff(t)
    return {
        "p50_s": nearest_rank(gaps, 0.5),
        "p95_s": nearest_rank(gaps, 0.95),
        "max_s": float(gaps.max()) if gaps.size else None,
    }


def _since(moment: float, later: float) -> float | None:
    return later - moment if math.isfinite(moment) and math.isfinite(later) else None


def frame_counts(classes: np.ndarray) -> dict[str, int]:
    return {
        "native_frames": int(np.count_nonzero(classes == NATIVE)),
        "repeat_frames": int(np.count_nonzero(classes == REPEAT)),
        "interpolated_frames": int(np.count_nonzero(classes == INTERPOLATED)),
    }


def warning_of(block: dict[str, Any]) -> str | None:
    """The one line a run prints when repeats or interpolations pass ``NON_NATIVE_WARN``."""
    share = block.get("non_native_share")
    if not isinstance(share, int | float) or share <= NON_NATIVE_WARN:
        return None
    return (
        f"{100 * share:.0f}% of the frames received were not generated by the model "
        f"({block['repeat_frames']} repeated, {block['interpolated_frames']} interpolated); "
        f"only the {block['native_frames']} native frames are counted "
        f"(native rate {block['native_rate_fps']:g} fps, announced {block['announced_fps']:g})"
    )


def target_of(meta: dict[str, Any]) -> float:
    """The target the episode was judged against (``--realtime-target``, kept in the
    provenance's configuration so that ``rescore`` applies it again); 16 without one."""
    provenance = meta.get("provenance")
    config = provenance.get("config") if isinstance(provenance, dict) else None
    value = config.get("realtime_target_fps") if isinstance(config, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return DEFAULT_TARGET_FPS


def runtime_block(cache: EpisodeCache, target_fps: float | None = None) -> dict[str, Any] | None:
    """scores.json's ``runtime`` object of a served stream-mode session's cache; None for a
    cache without received frames (in-process runs, replays of rollouts no session recorded,
    caches written before it)."""
    timing = cache.timing
    if timing is None or timing.received is None:
        return None
    target_fps = target_fps if target_fps is not None else target_of(cache.meta)
    rec = timing.received
    native = timing.arrivals
    counts = frame_counts(rec.classes)
    received = int(rec.classes.size)
    connect, configure, ready, _first_key = (float(x) for x in rec.session_times)
    finite = native[np.isfinite(native)]
    first_native = float(finite.min()) if finite.size else math.nan
    # the stream starts one frame interval before its first native frame: the time to that
    # frame is reported apart (time_to_first_frame_s), never blended into the windows' rates
    t0 = first_native - 1.0 / cache.fps
    last = float(finite.max()) if finite.size else math.nan
    stream_s = (last - t0) if math.isfinite(last) and math.isfinite(t0) else 0.0
    windows = sustained_windows(native, t0) if math.isfinite(t0) else np.zeros(0)
    worst = float(windows.min()) if windows.size else None
    block = cache.meta.get("interactivity")
    chunk = block.get("chunk_frames_median") if isinstance(block, dict) else None
    chunk_frames = max(MIN_STALL_CHUNK, int(chunk) if isinstance(chunk, int) else 0)
    threshold = STALL_CHUNKS * chunk_frames / cache.fps
    n_stalls, stall_s = stalls(native, threshold)
    first_received = float(rec.arrivals.min()) if rec.arrivals.size else math.nan
    starts = block.get("chunk_starts") if isinstance(block, dict) else None
    chunk_times = (
        np.array([native[s] for s in starts if 0 <= s < native.size], dtype=np.float64)
        if isinstance(starts, list)
        else np.zeros(0)
    )
    latencies = [
        x
        for x in key_response_latencies(
            timing.change_times.tolist(), timing.change_keys, native.tolist(), cache.sx, cache.srad
        )
        if x is not None
    ]
    span = (float(finite.max() - finite.min())) if finite.size >= 2 else 0.0
    out: dict[str, Any] = {
        **counts,
        "received_frames": received,
        "non_native_share": round(1 - counts["native_frames"] / received, 4) if received else 0.0,
        "announced_fps": cache.fps * rec.period,
        "native_rate_fps": cache.fps,
        "native_fps": round((finite.size - 1) / span, 3) if span > 0 else None,
        "native_fps_median": _rounded(nearest_rank(windows, 0.5)),
        "worst_window_fps": round(worst, 3) if worst is not None else None,
        "window_s": WINDOW_S,
        "worst_60s_window_fps": _worst_minute(native, t0, stream_s),
        "stream_seconds": round(stream_s, 3),
        "realtime_target_fps": target_fps,
        "realtime": verdict(stream_s, worst, n_stalls, target_fps),
        "time_to_first_frame_s": _rounded(_since(connect, first_received)),
        "configure_to_first_frame_s": _rounded(_since(configure, first_received)),
        "cold_start_s": _rounded(_since(connect, ready)),
        "frame_interval": _rounded_all(intervals(native)),
        "chunk_interval": _rounded_all(intervals(chunk_times)),
        "stalls": n_stalls,
        "stall_seconds": round(stall_s, 3),
        "stall_threshold_s": round(threshold, 3),
        "key_response_p50_s": _rounded(nearest_rank(latencies, 0.5)),
        "key_response_p95_s": _rounded(nearest_rank(latencies, 0.95)),
        "key_responses": len(latencies),
    }
    out["warning"] = warning_of(out)
    return out


def _worst_minute(native: F64, t0: float, stream_s: float) -> float | None:
    """The worst ``MIN_STREAM_S`` window sliding by 1 s (the issue's reading of the rule,
    looser than LiveFrame's 10 s windows); None for a stream shorter than a minute."""
    if stream_s < MIN_STREAM_S:
        return None
    return _rounded(float(sustained_windows(native, t0, MIN_STREAM_S).min()))


def _rounded(x: float | None) -> float | None:
    return round(x, 4) if x is not None else None


def _rounded_all(d: dict[str, float | None]) -> dict[str, float | None]:
    return {k: _rounded(v) for k, v in d.items()}

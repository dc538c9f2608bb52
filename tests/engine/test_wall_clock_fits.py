"""A wall-clock episode samples the motion-type fit at its segments' real picks
(docs/serve-formats.md#fits-on-a-wall-clock).

A server that plays slower than its nominal rate makes every key's segment shorter than
``seconds per key × nominal fps``; perception planned on that nominal schedule sampled the
wrong frames (the A segment's picks fell into D, D's beyond the episode's end), and the
motion-type weights, hence purity and direction accuracy, came out wrong (measured over a real
transport: purity 49.6 against 99.4 in process). An adaptive plan samples every frame and keeps
the reference's picks of the segments that arrived.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from streameval.protocol.schedule import Schedule
from streameval.replay import ReplaySource
from streameval.replay.rollout import read_rollout_dir

from streameval.core.episode.motion import FitSample
from streameval.core.events import EpisodeEnd, EpisodeInfo, EpisodeStart, FrameEvent
from streameval.engine.config import PipelineConfig
from streameval.engine.perception_plan import PLAN_KEY, keep_fit_samples, plan_for, recorded_plan
from streameval.engine.recording import RecordingObserver
from streameval.engine.scoring import fit_plan
from streameval.metrics.fits.motion_type import fit_frames
from streameval.results.cache.episode import load_episode_cache
from tests.engine.helpers import ListSource, run, shifting_events, textured

# The frames' own size as the analysis frame (320×216, no resize): what is checked is which
# frames are sampled and that the runs agree bit for bit, at a quarter of the default's flow cost.
WIDTH, HEIGHT = 320, 216
CONFIG = PipelineConfig(
    queue_size=64, cuts="scenedetect-adaptive", analysis_width=WIDTH, analysis_height=HEIGHT
)
KEYS = "ADLR"
CONTROL = [f"direction_{m}_{p}" for m in ("accuracy", "purity") for p in ("trans", "rot")]
FRAMES_PER_KEY = 64  # 6.4 s at the 10 fps the server really plays
SECONDS_PER_KEY = 6.4


def _slow_server(clock: str | None) -> list[Any]:
    """The frames of a server playing 10 fps while announcing 16: 6.4 s per key gives 64
    frames, the nominal schedule says 102."""
    events = shifting_events(KEYS, FRAMES_PER_KEY)
    start = events[0]
    assert isinstance(start, EpisodeStart)
    nominal = Schedule.per_key(list(KEYS), SECONDS_PER_KEY, 16.0)
    extra: dict[str, Any] = {"live": True}
    if clock is not None:
        extra["interactivity"] = {"clock": clock, "seconds_per_key": SECONDS_PER_KEY}
    events[0] = EpisodeStart(replace(start.info, schedule=nominal, source="slow", extra=extra))
    return events


def _scores(results: Path) -> dict[str, Any]:
    return dict(json.loads((results / "scores.json").read_text())["metrics"])


def _values(metrics: dict[str, Any]) -> dict[str, Any]:
    return {name: m.get("normalized") for name, m in metrics.items()}


def test_a_slow_server_scores_as_its_frames_do_in_process(tmp_path: Path) -> None:
    run(ListSource(shifting_events(KEYS, FRAMES_PER_KEY)), tmp_path / "in_process", config=CONFIG)
    run(ListSource(_slow_server("wall")), tmp_path / "wall", config=CONFIG)
    in_process = _scores(tmp_path / "in_process")
    wall = _scores(tmp_path / "wall")
    assert _values(wall) == _values(in_process)
    for name in CONTROL:
        assert wall[name]["details"] == in_process[name]["details"], name
    # the samples kept are exactly the reference's picks of the segments that arrived
    cache = load_episode_cache(tmp_path / "wall" / "cache")
    picks = fit_plan(None, cache.frame_keys, 16.0)
    assert sorted({s.frame for s in cache.fit_samples}) == sorted(
        {f for frames in picks.values() for f in frames}
    )
    # planned on the nominal schedule (the old behaviour, kept for a video clock), other frames
    # are sampled. (Their weights cannot differ here: a flat picture sliding sideways shows
    # neither a turn nor parallax, so no frame of it carries type evidence,
    # docs/methods.md#motion-type-fit.)
    run(ListSource(_slow_server(None)), tmp_path / "nominal", config=CONFIG)
    nominal = load_episode_cache(tmp_path / "nominal" / "cache")
    assert {s.frame for s in nominal.fit_samples} != {s.frame for s in cache.fit_samples}


def test_the_recording_keeps_the_picks_and_replays_bit_identically(tmp_path: Path) -> None:
    recording = tmp_path / "recording"
    run(
        ListSource(_slow_server("wall")),
        tmp_path / "live",
        [RecordingObserver(recording)],
        CONFIG,
    )
    meta = json.loads((recording / "meta.json").read_text())
    plan = recorded_plan(meta)
    assert plan is not None and not plan.adaptive and not plan.fit_depth_network
    assert meta[PLAN_KEY]["fit_depth_network"] is False
    live = load_episode_cache(tmp_path / "live" / "cache")
    assert plan.fit_frames == {s.frame for s in live.fit_samples}
    rollout = read_rollout_dir(recording)
    assert plan_for(rollout.info()).fit_frames == plan.fit_frames
    run(ReplaySource(rollout), tmp_path / "replay", config=CONFIG)
    assert _scores(tmp_path / "replay") == _scores(tmp_path / "live")
    replayed = load_episode_cache(tmp_path / "replay" / "cache")
    assert [s.frame for s in replayed.fit_samples] == [s.frame for s in live.fit_samples]
    for a, b in zip(replayed.fit_samples, live.fit_samples, strict=True):
        # NaN where a point is too near the edge (docs/methods.md#motion-type-fit)
        assert np.array_equal(a.u, b.u, equal_nan=True)
        assert np.array_equal(a.v, b.v, equal_nan=True)


def _sample(frame: int) -> FitSample:
    zero = np.zeros(4, np.float32)
    return FitSample(frame=frame, x=zero, y=zero, u=zero, v=zero, invz=None)


def test_only_the_open_segment_keeps_every_sample() -> None:
    keys = ["A"] * 40 + ["W"] * 20 + ["D"] * 30
    samples = [_sample(f) for f in range(len(keys))]
    kept = {s.frame for s in keep_fit_samples(samples, keys, 16.0, final=False)}
    # A closed and settled: its picks; W: none (not lateral or yaw); D open: all of it
    assert kept == set(fit_frames(0, 40, 16.0, 90)) | set(range(60, 90))
    final = {s.frame for s in keep_fit_samples(samples, keys, 16.0, final=True)}
    assert final == set(fit_frames(0, 40, 16.0, 90)) | set(fit_frames(60, 90, 16.0, 90))


@pytest.mark.parametrize("n_after", [1, 2, 3])
def test_a_segment_closing_at_the_end_waits_until_its_picks_settle(n_after: int) -> None:
    """Its 90 % point within 3 frames of the episode's end: the ``n - 3`` clamp (and with it
    the 3-frame fallback) could still change its picks, so all of its samples stay."""
    keys = ["A"] * 10 + ["W"] * n_after
    samples = [_sample(f) for f in range(len(keys))]
    kept = {s.frame for s in keep_fit_samples(samples, keys, 16.0, final=False)}
    if int(0.9 * 10) <= len(keys) - 3:
        assert kept == set(fit_frames(0, 10, 16.0, len(keys)))
    else:
        assert kept == set(range(10))


def _turning_server(clock: str | None) -> list[Any]:
    """Frames of a camera turning in place, 0.5° a frame (a yaw homography of one texture,
    no depth given): L/R frames turn, A/D frames stand still, so the depth-free fit frames of
    L and R carry a turn to warp out (A is still)."""
    import cv2

    from streameval.metrics.fits.motion_type import analysis_focal

    width, height, fps = WIDTH, HEIGHT, 16.0
    keys, per_key = "LARL", 40  # keys of 2.5 s
    schedule = Schedule.per_key(list(keys), per_key / fps, fps)
    focal = analysis_focal(width)
    k = np.array([[focal, 0.0, (width - 1) / 2], [0.0, focal, (height - 1) / 2], [0, 0, 1.0]])
    canvas = textured(11, height, width)
    extra: dict[str, Any] = {"live": True}
    if clock is not None:
        extra["interactivity"] = {"clock": clock, "seconds_per_key": per_key / fps}
    info = EpisodeInfo("turning", "synthetic-model", "test", fps, schedule, "memory", extra=extra)
    events: list[Any] = [EpisodeStart(info)]
    heading = 0.0
    for i in range(schedule.total_frames):
        key = schedule.key_for_frame(i)
        heading += {"L": -0.5, "R": 0.5}.get(key, 0.0) * np.pi / 180.0
        c, s = np.cos(heading), np.sin(heading)
        turn = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
        image = cv2.warpPerspective(
            canvas, k @ turn @ np.linalg.inv(k), (width, height),
            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_REFLECT,
        )  # fmt: skip
        events.append(FrameEvent(i, np.ascontiguousarray(image), key, i / fps))
    events.append(EpisodeEnd(schedule.total_frames))
    return events


@pytest.mark.parametrize("pending_limit", [480, 2])
def test_a_live_episode_warps_out_only_its_picks_and_gets_the_planned_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pending_limit: int
) -> None:
    """A wall-clock episode samples every lateral/yaw frame plain and warps the turn out
    (docs/methods.md#motion-type-fit, "Derotation") only at the picks, once they settle or at
    the end; planned on a schedule it keeps (a replay), the picks are warped out at once.
    Bit-identical samples either way, also when the pending pairs overflow their limit."""
    import streameval.perception.perceiver as perceiver

    monkeypatch.setattr(perceiver, "MAX_PENDING_TURNS", pending_limit)
    warps: list[str] = []  # the thread of each warp
    original = perceiver.warped_out_flow

    def counted(*args: Any) -> Any:
        warps.append(threading.current_thread().name)
        return original(*args)

    monkeypatch.setattr(perceiver, "warped_out_flow", counted)
    live = run(ListSource(_turning_server("wall")), tmp_path / "live", config=CONFIG)
    live_warps = list(warps)
    warps.clear()
    planned = run(ListSource(_turning_server(None)), tmp_path / "planned", config=CONFIG)
    assert live.complete and planned.complete
    a = load_episode_cache(tmp_path / "live" / "cache").fit_samples
    b = load_episode_cache(tmp_path / "planned" / "cache").fit_samples
    assert [s.frame for s in a] == [s.frame for s in b] and len(a) >= 12
    assert all(s.derotated for s in a) and all(s.derotated for s in b)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x.u, y.u, equal_nan=True) and np.array_equal(x.v, y.v, equal_nan=True)
    assert _scores(tmp_path / "live") == _scores(tmp_path / "planned")
    turning = {s.frame for s in a if not 40 <= s.frame < 80}  # the L, R, L picks
    assert len(warps) == len(turning)  # planned: the turning picks only
    if pending_limit > 40:  # live: the same warps, once the picks are known
        assert len(live_warps) == len(turning)
        # L's and R's picks when the next key began (on the finishing thread, overlapped with
        # the flow), the last L's at the end
        last = sum(1 for f in turning if f >= 120)
        assert live_warps.count("perception-finish") == len(turning) - last > 0 and last > 0
    else:
        assert len(live_warps) > 40  # past the limit every turning frame is warped out at once

"""A live recording replays bit-identically even where the live run dropped frames or its segments
ran longer than the nominal schedule perception planned on (a wall clock,
docs/serve-formats.md#alignment-and-recordings): the recording keeps the plan and the drops
(``perception_plan.py``) and its replay honours them. Without them the same replay scores
differently — what the README used to admit."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from streameval.protocol.schedule import Schedule
from streameval.replay import ReplaySource
from streameval.replay.rollout import read_rollout_dir

from streameval.core.events import EpisodeStart, FrameEvent
from streameval.engine.config import PipelineConfig
from streameval.engine.perception_plan import PLAN_KEY, plan_for, recorded_plan
from streameval.engine.recording import RecordingObserver
from streameval.results.cache.episode import load_episode_cache
from tests.engine.helpers import ListSource, run, shifting_events

CONFIG = PipelineConfig(queue_size=2, cuts="scenedetect-adaptive")
# Where the drops come from a recorded plan, not from perception falling behind: the frames'
# own 320×216 as the analysis frame (what is checked is keys, drops and gaps, not flow values).
PLANNED_DROPS = replace(CONFIG, analysis_width=320, analysis_height=216)


def _live_events() -> list[Any]:
    """A and D held 90 frames each, while the schedule announced at the start (a wall-clock
    plan: seconds per key × nominal fps) says 64 each: the fit frames and views it plans are
    not those of the frames that arrived."""
    events = shifting_events("AD", 90)
    start = events[0]
    assert isinstance(start, EpisodeStart)
    nominal = Schedule.per_key(["A", "D"], 4.0, 16.0)
    events[0] = EpisodeStart(replace(start.info, schedule=nominal, source="live-test"))
    return events


def _metrics(results: Path) -> dict[str, Any]:
    return dict(json.loads((results / "scores.json").read_text())["metrics"])


def test_replay_of_a_recording_with_drops_is_bit_identical(tmp_path: Path) -> None:
    recording = tmp_path / "recording"
    live = run(
        ListSource(_live_events(), droppable=True),
        tmp_path / "live",
        [RecordingObserver(recording)],
        CONFIG,
    )
    dropped = live.interactivity["frames_dropped"]
    assert isinstance(dropped, int) and dropped > 0  # perception fell behind a live stream
    # a dropped frame keeps its own key, not the nominal schedule's (which says D from frame
    # 64: filled from it, A-D-A flips became spurious reversals in Revisit Memory)
    sent = [e.key for e in _live_events() if isinstance(e, FrameEvent)]
    keys = load_episode_cache(tmp_path / "live" / "cache").frame_keys  # up to the last perceived
    assert keys == sent[: len(keys)]
    meta = json.loads((recording / "meta.json").read_text())
    plan = recorded_plan(meta)
    assert plan is not None and len(plan.dropped) == dropped
    rollout = read_rollout_dir(recording)
    # the replay plans what the live run planned, not what its own keys would give
    assert plan_for(rollout.info()).fit_frames == plan.fit_frames
    own = plan_for(replace(rollout.info(), extra={}))
    assert own.fit_frames != plan.fit_frames

    replayed = run(ReplaySource(rollout), tmp_path / "replay", config=CONFIG)
    assert replayed.interactivity["frames_dropped"] == dropped
    assert _metrics(tmp_path / "replay") == _metrics(tmp_path / "live")

    # the same recording without its plan: perceived afresh, it scores differently
    del meta[PLAN_KEY]
    (recording / "meta.json").write_text(json.dumps(meta))
    run(ReplaySource(read_rollout_dir(recording)), tmp_path / "fresh", config=CONFIG)
    assert _metrics(tmp_path / "fresh") != _metrics(tmp_path / "live")


def test_a_malformed_plan_is_ignored_as_a_whole() -> None:
    good = {"fit_frames": [1, 2], "views": [0], "dropped_frames": [5]}
    assert recorded_plan({PLAN_KEY: good}) is not None
    for bad in (
        {**good, "views": "0"},
        {**good, "dropped_frames": [-1]},
        {**good, "fit_frames": [True]},
        {"fit_frames": [1]},
        [1, 2],
    ):
        assert recorded_plan({PLAN_KEY: bad}) is None, bad


def test_frames_of_the_recording_are_all_kept(tmp_path: Path) -> None:
    """The recorder hooks in before the drop: every frame is in the recording."""
    recording = tmp_path / "recording"
    events = _live_events()
    run(
        ListSource(events, droppable=True),
        tmp_path / "live",
        [RecordingObserver(recording)],
        CONFIG,
    )
    rollout = read_rollout_dir(recording)
    assert rollout.frame_count == sum(isinstance(e, FrameEvent) for e in events)


def _events_dropping(frames: range) -> list[Any]:
    """The live events with a recorded plan that drops ``frames`` (deterministic drops)."""
    events = _live_events()
    start = events[0]
    assert isinstance(start, EpisodeStart)
    plan = {"fit_frames": [], "views": [], "dropped_frames": list(frames)}
    events[0] = EpisodeStart(replace(start.info, extra={PLAN_KEY: plan}))
    return events


def test_a_dropped_frame_keeps_its_own_key(tmp_path: Path) -> None:
    """Frames 66-79 dropped (deterministically, through a plan's drop list) where the nominal
    schedule already says D but the frames were conditioned on A: the cache keeps A. Filled
    from the schedule, each such gap made A→D→A flips, i.e. spurious Revisit reversals."""
    events = _events_dropping(range(66, 80))
    outcome = run(ListSource(events), tmp_path, config=PLANNED_DROPS)
    assert outcome.interactivity["frames_dropped"] == 14
    keys = load_episode_cache(tmp_path / "cache").frame_keys
    assert keys == ["A"] * 90 + ["D"] * 90
    revisit = _metrics(tmp_path)["revisit_memory"]
    assert revisit["details"]["n_reversals"] == 1


def test_frames_dropped_at_the_end_still_belong_to_the_episode(tmp_path: Path) -> None:
    """The last 12 frames received but never perceived (a live source's trailing drops): the
    episode keeps its 180 frames, those keep their own keys and their signals are missing
    (NaN), as a gap inside the episode is; it used to end at the last perceived frame, so its
    last segment was 12 frames short."""
    events = _events_dropping(range(168, 180))
    outcome = run(ListSource(events), tmp_path, config=PLANNED_DROPS)
    assert outcome.frames == 180 and outcome.interactivity["frames_dropped"] == 12
    cache = load_episode_cache(tmp_path / "cache")
    assert cache.frame_keys == ["A"] * 90 + ["D"] * 90
    assert len(cache.sx) == 178
    assert np.isnan(cache.sx[166:]).all() and np.isfinite(cache.sx[:166]).all()
    accuracy = _metrics(tmp_path)["direction_accuracy_trans"]["details"]["segments"]
    assert accuracy[-1]["end_frame"] == 180

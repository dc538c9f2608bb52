"""Bad frames, failing models, overload and cancellation: the session keeps going and
nothing received is lost."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import numpy as np
import pytest
from streameval.protocol.schedule import Schedule

from streameval.core.events import ErrorEvent, FrameEvent
from streameval.core.observers import EpisodeObserver
from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.metrics.fits.motion_type import DEPTH_FREE_METHOD
from streameval.results.scores_file import SCORES_FORMAT
from streameval.transports.inprocess.driver import InProcessSource
from tests.engine.helpers import ListSource, run, shifting_events, textured


class Collect(EpisodeObserver):
    def __init__(self) -> None:
        self.errors: list[str] = []
        self.frames = 0

    def on_frame(self, event: FrameEvent) -> None:
        self.frames += 1

    def on_error(self, error: ErrorEvent) -> None:
        self.errors.append(error.message)


def test_synthetic_shift_is_scored_in_the_right_direction(tmp_path: Path) -> None:
    outcome = run(ListSource(shifting_events("AD", 64)), tmp_path)
    acc = outcome.scores.metrics["direction_accuracy_trans"]
    assert acc.status == "official"
    # A uniform shift is as much a turn as a strafe, so the type gate halves it; the
    # ungated direction is what this checks.
    assert [s["dir"] for s in acc.details["segments"]] == pytest.approx([1, 1], abs=0.05)
    doc = json.loads((tmp_path / "scores.json").read_text())
    assert doc["format"] == SCORES_FORMAT and doc["frames"] == 128
    assert doc["provenance"]["backends"]["motion_type"] == DEPTH_FREE_METHOD


def test_wrong_frame_shape_is_reported_and_skipped(tmp_path: Path) -> None:
    events = shifting_events("A", 48)
    bad = events[10]
    assert isinstance(bad, FrameEvent)
    events[10] = FrameEvent(bad.index, np.zeros((5, 5), np.uint8), bad.key, bad.t_video)
    seen = Collect()
    outcome = run(ListSource(events), tmp_path, [seen])
    assert len(seen.errors) == 1 and "frame 9" in seen.errors[0] and "shape" in seen.errors[0]
    assert not outcome.complete  # a rejected frame marks the episode incomplete...
    assert outcome.frames == 48  # ...but every other frame is still scored
    cache = np.load(tmp_path / "cache" / "signals.npz")
    assert math.isnan(cache["sx"][7]) and math.isnan(cache["sx"][9])  # the gap, as NaN
    assert np.isfinite(cache["sx"][10])


class Exploding:
    fps = 16.0

    def __init__(self, fail_at: int) -> None:
        self.fail_at = fail_at
        self.n = 0

    def step(self, key: str) -> np.ndarray:
        self.n += 1
        if self.n > self.fail_at:
            raise RuntimeError("CUDA out of memory")
        return np.roll(textured(3), 2 * self.n, axis=1)


def test_model_failure_ends_episode_incomplete_with_results(tmp_path: Path) -> None:
    schedule = Schedule.per_key(["D"], 4.0, 16.0)
    source = InProcessSource(Exploding(40), schedule, episode="e", model_name="boom", suite="t")
    seen = Collect()
    outcome = run(source, tmp_path, [seen])
    assert not outcome.complete and outcome.frames == 40
    assert any("CUDA out of memory" in e and "frame 40" in e for e in seen.errors)
    doc = json.loads((tmp_path / "scores.json").read_text())
    assert doc["complete"] is False and doc["frames"] == 40


def test_live_source_drops_frames_when_perception_falls_behind(tmp_path: Path) -> None:
    events = shifting_events("A", 80)
    seen = Collect()
    config = PipelineConfig(queue_size=2)
    outcome = run(ListSource(events, droppable=True), tmp_path, [seen], config)
    dropped = outcome.interactivity["frames_dropped"]
    assert isinstance(dropped, int) and dropped > 0
    assert seen.frames == 80  # observers (the recorder) saw every frame
    assert outcome.interactivity["frames_received"] == 80


class _Received(EpisodeObserver):
    """Sets ``reached`` once ``n`` frames have been received (0: at the episode's start)."""

    def __init__(self, n: int) -> None:
        self.n, self.seen = n, 0
        self.reached = asyncio.Event()

    def on_start(self, info: object) -> None:
        if self.n == 0:
            self.reached.set()

    def on_frame(self, event: FrameEvent) -> None:
        self.seen += 1
        if self.seen >= self.n:
            self.reached.set()


def _cancelled_at(tmp_path: Path, received: int, settle_s: float) -> dict[str, object]:
    events = shifting_events("AD", 200)

    async def main() -> None:
        seen = _Received(received)
        task = asyncio.create_task(
            run_episode(ListSource(events, delay_s=0.002), results_dir=tmp_path, observers=[seen])
        )
        await seen.reached.wait()  # progress, not a guess of how fast this machine is
        await asyncio.sleep(settle_s)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    doc: dict[str, object] = json.loads((tmp_path / "scores.json").read_text())
    return doc


def test_cancel_finalizes_incomplete_episode(tmp_path: Path) -> None:
    doc = _cancelled_at(tmp_path, received=40, settle_s=0.3)
    assert doc["complete"] is False
    assert 0 < doc["frames"] < 400  # type: ignore[operator]


def test_a_cancel_before_perception_saw_the_start_still_writes_the_episode(
    tmp_path: Path,
) -> None:
    """Cancelled in the turn the source announced the episode: perception may not have
    started it yet; the episode is still finalized (incomplete), not lost."""
    doc = _cancelled_at(tmp_path, received=0, settle_s=0.0)
    assert doc["complete"] is False


def test_recording_keeps_every_frame_of_a_fast_source(tmp_path: Path) -> None:
    """The recorder hears of the episode before its first frame, however fast frames come."""
    from streameval.replay import read_rollout

    from streameval.engine.recording import RecordingObserver

    recording = RecordingObserver(tmp_path / "recording")
    outcome = run(ListSource(shifting_events("AD", 40)), tmp_path / "out", [recording])
    assert recording.errors == []
    assert read_rollout(tmp_path / "recording").frame_count == outcome.frames == 80


def test_recorder_failure_is_reported_to_the_other_observers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recording that cannot start is one ErrorEvent on the episode's channel: every observer
    hears it (the dashboard's log, the console printer), the outcome and scores.json keep it,
    nothing is printed over the screen, and the evaluation goes on."""
    from streameval.engine.recording import RecordingObserver

    class Errors(EpisodeObserver):
        def __init__(self) -> None:
            self.events: list[ErrorEvent] = []

        def on_error(self, error: ErrorEvent) -> None:
            self.events.append(error)

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the recording directory should go")
    recording = RecordingObserver(blocker / "recording")
    errors = Errors()
    outcome = run(ListSource(shifting_events("AD", 20)), tmp_path / "out", [recording, errors])
    assert outcome.frames == 40
    assert len(recording.errors) == 1 and recording.errors[0].startswith("recording stopped:")
    assert [e.message for e in errors.events] == recording.errors
    assert [(e.source, e.fatal) for e in errors.events] == [("recorder", False)]
    assert outcome.errors == errors.events
    doc = json.loads((tmp_path / "out" / "scores.json").read_text())
    assert doc["errors"] == [e.to_json() for e in errors.events]
    assert doc["errors"][0]["message"].startswith("recording stopped:")
    assert "recording stopped" not in capsys.readouterr().err

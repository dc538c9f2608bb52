"""Fixed-FPS pacing: deadlines from the start, no drift; ``None`` is as fast as possible."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from streameval.replay import Pacer, ReplaySource, pace_for, read_rollout_dir

from streameval.core.events import EndOfStream, EpisodeStart, FrameEvent
from streameval.errors import BadInputError
from tests.replay.replay_synth import drain, make_rollout_dir


async def _wait_all(pacer: Pacer, n: int, slow_at: int | None = None) -> float:
    t0 = time.monotonic()
    for i in range(n):
        await pacer.wait(i)
        if i == slow_at:
            await asyncio.sleep(0.05)  # a slow consumer: later frames catch up, no drift
    return time.monotonic() - t0


def test_twenty_frames_at_100_fps() -> None:
    elapsed = asyncio.run(_wait_all(Pacer(100.0), 20))
    assert 0.19 <= elapsed < 0.4


def test_late_frame_does_not_push_the_rest_back() -> None:
    pacer = Pacer(100.0)
    elapsed = asyncio.run(_wait_all(pacer, 20, slow_at=3))
    assert 0.19 <= elapsed < 0.3
    assert pacer.late_frames >= 1


def test_no_pace_is_fast() -> None:
    assert asyncio.run(_wait_all(Pacer(None), 1000)) < 0.05


def test_pace_for_cli() -> None:
    assert pace_for(24.0) is None
    assert pace_for(24.0, realtime=True) == 24.0
    assert pace_for(24.0, fps=5) == 5
    with pytest.raises(BadInputError, match="--realtime and --fps are exclusive"):
        pace_for(24.0, realtime=True, fps=5)


def test_replay_source_paced(tmp_path: Path) -> None:
    rollout = read_rollout_dir(make_rollout_dir(tmp_path / "ep", ["D"] * 20))
    t0 = time.monotonic()
    events = asyncio.run(drain(ReplaySource(rollout, pace=100.0)))
    elapsed = time.monotonic() - t0
    assert sum(isinstance(e, FrameEvent) for e in events) == 20
    assert 0.19 <= elapsed < 0.6
    with pytest.raises(BadInputError, match="--fps"):
        ReplaySource(rollout, pace=0)


def test_close_mid_stream_stops_the_decoder(tmp_path: Path) -> None:
    rollout = read_rollout_dir(make_rollout_dir(tmp_path / "ep", ["W"] * 200))

    async def run() -> None:
        source = ReplaySource(rollout, buffer_frames=4)
        assert isinstance(await source.recv(), EpisodeStart)
        for _ in range(5):
            assert isinstance(await source.recv(), FrameEvent)
        await asyncio.sleep(0.05)  # the decoder fills its buffer and waits for a slot
        await source.close()
        with pytest.raises(EndOfStream):
            await source.recv()
        await source.close()

    asyncio.run(asyncio.wait_for(run(), timeout=5))

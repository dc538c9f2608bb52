"""Recorder → ReplaySource gives back exactly what was recorded
(docs/methods.md#control-metrics: bit-identical replay)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from streameval.replay import Recorder, ReplaySource, open_rollouts, read_rollout_dir

from streameval.core.events import (
    EpisodeEnd,
    EpisodeStart,
    FrameEvent,
    KeySent,
    SourceError,
)
from streameval.errors import BadInputError
from tests.replay.replay_synth import collect, moving_texture

N = 48
W, H = 96, 64
KEYS = ["W"] * 16 + ["A"] * 16 + ["-"] * 8 + ["R"] * 8


def _poses(n: int, rng: np.random.Generator) -> np.ndarray:
    poses = np.tile(np.eye(4), (n, 1, 1))
    for i in range(n):
        a = rng.uniform(-np.pi, np.pi)
        poses[i, :3, :3] = [[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]]
        poses[i, :3, 3] = rng.normal(size=3)
    return poses


def _record(
    out: Path,
    *,
    n: int = N,
    with_nan_depth: bool = True,
    varying_k: bool = False,
    close: bool = True,
) -> tuple[Recorder, list[FrameEvent], list[KeySent]]:
    rng = np.random.default_rng(7)
    images = moving_texture(n, H, W, seed=3)
    poses = _poses(n, rng)
    k = np.array([[80.0, 0, W / 2], [0, 80.0, H / 2], [0, 0, 1]])
    recorder = Recorder(out, fps=16, model="synth-model", suite="keystroke16", episode="ep-1")
    frames: list[FrameEvent] = []
    keys: list[KeySent] = []
    plan = [KEYS[i % len(KEYS)] for i in range(n)]
    for i in range(n):
        if i == 0 or plan[i] != plan[i - 1]:
            sent = KeySent(key=plan[i], frame=i, t_wall=1000.0 + i / 16 - 0.01)
            recorder.add_key(sent)
            keys.append(sent)
        depth = rng.uniform(0.5, 20.0, size=(H // 2, W // 2)).astype(np.float32)
        if with_nan_depth and i % 5 == 0:
            depth[3, 4] = np.nan
            depth[0, 0] = np.inf
        event = FrameEvent(
            index=i,
            image=images[i],
            key=plan[i],
            t_video=i / 16,
            t_wall=1000.0 + i / 16 + 0.001,
            pose=poses[i],
            depth=depth,
            # focal lengths and centre vary; the last row stays [0, 0, 1] (pinhole)
            intrinsics=k * np.array([[1 + i / 100], [1 + i / 100], [1.0]]) if varying_k else k,
        )
        recorder.add_frame(event)
        frames.append(event)
    if close:
        recorder.close(complete=True)
    return recorder, frames, keys


def test_record_then_replay_is_bit_identical(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    _, recorded, keys = _record(out)
    assert sorted(p.name for p in out.iterdir()) == [
        "actions.jsonl",
        "depth_metric.npy",
        "intrinsics.npy",
        "keys.jsonl",
        "meta.json",
        "poses.npy",
        "video.mp4",
    ]
    assert np.load(out / "intrinsics.npy").shape == (3, 3)  # constant camera stays (3, 3)

    rollout = read_rollout_dir(out)
    events = collect(ReplaySource(rollout))

    start = events[0]
    assert isinstance(start, EpisodeStart)
    info = start.info
    assert (info.episode, info.model, info.suite, info.fps) == (
        "ep-1",
        "synth-model",
        "keystroke16",
        16.0,
    )
    assert (info.width, info.height) == (W, H)
    assert info.schedule.keys == ("W", "A", "-", "R")
    assert info.schedule.boundaries == (0, 16, 32, 40, 48)
    assert info.source == str(out)

    got_frames = [e for e in events if isinstance(e, FrameEvent)]
    assert len(got_frames) == N
    for want, got in zip(recorded, got_frames, strict=True):
        assert got.index == want.index
        assert got.image.dtype == np.uint8 and got.image.shape == (H, W, 3)
        assert np.array_equal(got.image, want.image)
        assert got.key == want.key
        assert got.t_video == want.index / 16
        assert got.t_wall == want.t_wall
        assert want.pose is not None and want.intrinsics is not None and want.depth is not None
        assert got.pose is not None and np.array_equal(got.pose, want.pose)
        assert got.intrinsics is not None and np.array_equal(got.intrinsics, want.intrinsics)
        assert got.depth is not None and got.depth.dtype == np.float32
        # exactly as sent, NaN and +inf included (a model's sky is +inf)
        assert np.array_equal(got.depth, want.depth, equal_nan=True)
        assert np.array_equal(np.isposinf(got.depth), np.isposinf(want.depth))

    assert [e for e in events if isinstance(e, KeySent)] == keys
    # each keystroke is delivered just before the frame it was meant to condition
    for i, e in enumerate(events):
        if isinstance(e, KeySent):
            nxt = events[i + 1]
            assert isinstance(nxt, KeySent | FrameEvent)
            if isinstance(nxt, FrameEvent):
                assert nxt.index == e.frame

    assert not any(isinstance(e, SourceError) for e in events)
    assert events[-1] == EpisodeEnd(frames=N, complete=True, reason=None)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["frames"] == N and meta["complete"] is True


def test_varying_intrinsics_are_kept_per_frame(tmp_path: Path) -> None:
    _, recorded, _ = _record(tmp_path / "rec", n=12, varying_k=True, with_nan_depth=False)
    assert np.load(tmp_path / "rec" / "intrinsics.npy").shape == (12, 3, 3)
    assert not (tmp_path / "rec" / "depth_valid_mask.npz").exists()
    frames = [
        e
        for e in collect(ReplaySource(read_rollout_dir(tmp_path / "rec")))
        if isinstance(e, FrameEvent)
    ]
    for want, got in zip(recorded, frames, strict=True):
        assert want.intrinsics is not None and want.depth is not None
        assert got.intrinsics is not None and np.array_equal(got.intrinsics, want.intrinsics)
        assert got.depth is not None and np.array_equal(got.depth, want.depth)


def test_incomplete_recording_replays_as_incomplete(tmp_path: Path) -> None:
    recorder, _, _ = _record(tmp_path / "rec", n=10, close=False)
    recorder.close(complete=False, reason="model stopped answering")
    events = collect(ReplaySource(read_rollout_dir(tmp_path / "rec")))
    assert events[-1] == EpisodeEnd(frames=10, complete=False, reason="model stopped answering")


def test_crash_mid_recording_leaves_a_replayable_prefix(tmp_path: Path) -> None:
    n = 64  # 4 s at 16 fps: the fragmented mp4 has flushed whole seconds to disk
    recorder, recorded, _ = _record(tmp_path / "rec", n=n, close=False)
    # the process dies here: copy what is on disk while the recorder is still open
    shutil.copytree(tmp_path / "rec", tmp_path / "crashed")
    recorder.close(complete=True)

    meta = json.loads((tmp_path / "crashed" / "meta.json").read_text())
    assert meta["complete"] is False
    events = collect(ReplaySource(read_rollout_dir(tmp_path / "crashed")))
    frames = [e for e in events if isinstance(e, FrameEvent)]
    end = events[-1]
    assert isinstance(end, EpisodeEnd) and not end.complete
    assert 0 < len(frames) < n and end.frames == len(frames)
    for want, got in zip(recorded, frames, strict=False):
        assert np.array_equal(got.image, want.image)
    assert frames[0].pose is None  # poses are written at close: a crash loses them, not frames


def test_frame_size_change_is_bad_input(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "rec", fps=16, model="m", suite="s", source="python:m:f")
    img = np.zeros((24, 32, 3), np.uint8)
    recorder.add_frame(FrameEvent(index=0, image=img, key="W", t_video=0.0))
    with pytest.raises(BadInputError, match=r"python:m:f: frame 1 is 16×16, .* 32×24"):
        recorder.add_frame(
            FrameEvent(index=1, image=np.zeros((16, 16, 3), np.uint8), key="W", t_video=1 / 16)
        )
    with pytest.raises(BadInputError, match="frame 3 arrived after frame 0"):
        recorder.add_frame(FrameEvent(index=3, image=img, key="W", t_video=3 / 16))
    recorder.close(complete=False, reason="bad frame")


def test_partial_sidecars_are_dropped_and_said_so(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "rec", fps=16, model="m", suite="s")
    img = np.zeros((24, 32, 3), np.uint8)
    for i in range(4):
        recorder.add_frame(
            FrameEvent(
                index=i,
                image=img,
                key="S",
                t_video=i / 16,
                pose=np.eye(4) if i < 2 else None,
                depth=np.ones((6, 8), np.float32),
            )
        )
    recorder.close(complete=True)
    meta = json.loads((tmp_path / "rec" / "meta.json").read_text())
    assert meta["sidecars_dropped"] == {"poses.npy": "frame 2 had no pose"}
    assert not (tmp_path / "rec" / "poses.npy").exists()
    frames = [
        e
        for e in collect(ReplaySource(read_rollout_dir(tmp_path / "rec")))
        if isinstance(e, FrameEvent)
    ]
    assert [f.pose for f in frames] == [None] * 4
    assert all(f.depth is not None and f.depth.shape == (6, 8) for f in frames)


def test_rerun_replaces_a_former_recording(tmp_path: Path) -> None:
    _record(tmp_path / "rec", n=2)
    (tmp_path / "rec" / "notes.txt").write_text("mine")
    with pytest.raises(BadInputError, match="already holds a rollout"):
        Recorder(tmp_path / "rec", fps=16, model="m", suite="s", overwrite=False)
    recorder = Recorder(tmp_path / "rec", fps=8, model="m2", suite="s")
    img = np.zeros((8, 8, 3), np.uint8)
    for i in range(3):
        recorder.add_frame(FrameEvent(index=i, image=img, key="L", t_video=i / 8))
    recorder.close(complete=True)
    assert not (tmp_path / "rec" / "poses.npy").exists()  # the former run's sidecar is gone
    assert (tmp_path / "rec" / "notes.txt").read_text() == "mine"
    rollouts, errors = open_rollouts([tmp_path / "rec"])
    assert not errors and (rollouts[0].model, rollouts[0].frame_count) == ("m2", 3)

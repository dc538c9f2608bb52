"""Adapter layout: one video beside ``actions.json`` or a one-hot ``actions.npy``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from streameval.replay import ReplaySource, open_rollouts, read_rollout

from streameval.core.events import EpisodeEnd, FrameEvent
from streameval.errors import BadInputError
from tests.replay.replay_synth import collect, write_video


def test_actions_json_beside_a_video(tmp_path: Path) -> None:
    d = tmp_path / "modelZ" / "run3"
    write_video(d / "clip.mp4", count=6, fps=24)
    (d / "actions.json").write_text(json.dumps(["w", "W", "L", "L", "-", "R"]))
    rollout = read_rollout(d)
    assert (rollout.layout, rollout.model, rollout.episode, rollout.fps) == (
        "adapter",
        "modelZ",
        "modelZ/run3",
        24.0,
    )
    assert rollout.frame_keys == ("W", "W", "L", "L", "-", "R")
    assert rollout.schedule.keys == ("W", "L", "-", "R")
    events = collect(ReplaySource(rollout))
    assert [e.key for e in events if isinstance(e, FrameEvent)] == list(rollout.frame_keys)
    assert events[-1] == EpisodeEnd(frames=6, complete=True)


def test_one_hot_actions_npy(tmp_path: Path) -> None:
    d = tmp_path / "m" / "ep"
    write_video(d / "out.webm", count=4, codec="libvpx-vp9")
    onehot = np.zeros((4, 6), np.float32)
    onehot[0, 0] = onehot[1, 2] = onehot[3, 5] = 1  # W, A, (none), R
    np.save(d / "actions.npy", onehot)
    rollouts, errors = open_rollouts([d])
    assert not errors and rollouts[0].frame_keys == ("W", "A", "-", "R")
    onehot[2, [1, 3]] = 1
    np.save(d / "actions.npy", onehot)
    several = r"actions\.npy: row 2 presses several keys at once \(S D\)"
    with pytest.raises(BadInputError, match=several):
        read_rollout(d)
    np.save(d / "actions.npy", np.zeros((4, 5)))
    with pytest.raises(BadInputError, match=r"actions\.npy: shape \(4, 5\)"):
        read_rollout(d)


def test_adapter_errors(tmp_path: Path) -> None:
    d = tmp_path / "m" / "ep"
    write_video(d / "a.mp4", count=5)
    (d / "actions.json").write_text(json.dumps(["W", "W", "Z"]))
    with pytest.raises(BadInputError, match=r"actions\.json: unknown key 'Z' at index 2"):
        read_rollout(d)
    (d / "actions.json").write_text(json.dumps(["W", "W", "S"]))
    with pytest.raises(BadInputError, match=r"actions\.json: 3 frames in the log but 5 in a\.mp4"):
        read_rollout(d)
    write_video(d / "b.mp4", count=5)
    with pytest.raises(BadInputError, match="exactly one video"):
        read_rollout(d)

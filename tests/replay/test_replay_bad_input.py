"""Bad input is refused up front with one line naming the file, or ends the stream cleanly."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
import pytest
from streameval.replay import Recorder, ReplaySource, open_rollouts, read_rollout_dir

from streameval.core.events import EpisodeEnd, FrameEvent, KeySent, SourceError
from streameval.errors import BadInputError
from tests.replay.replay_synth import (
    collect,
    make_rollout_dir,
    moving_texture,
    write_actions,
    write_meta,
    write_video,
)


def _fatal_end(events: Sequence[object]) -> tuple[SourceError, EpisodeEnd]:
    error, end = events[-2], events[-1]
    assert isinstance(error, SourceError) and error.fatal
    assert isinstance(end, EpisodeEnd) and not end.complete
    return error, end


def test_truncated_mp4_is_refused_at_open(tmp_path: Path) -> None:
    d = make_rollout_dir(tmp_path / "ep", ["W"] * 40)
    data = (d / "video.mp4").read_bytes()
    (d / "video.mp4").write_bytes(data[: len(data) // 2])  # the index (moov) is at the end
    rollouts, errors = open_rollouts([d])
    assert rollouts == [] and len(errors) == 1
    assert errors[0].source == str(d / "video.mp4") and "cannot open video" in str(errors[0])
    assert "\n" not in str(errors[0])


def test_truncated_recording_ends_with_a_fatal_error_naming_file_and_frame(tmp_path: Path) -> None:
    images = moving_texture(64, 48, 64, seed=1)
    with Recorder(tmp_path / "rec", fps=16, model="m", suite="s") as recorder:
        for i, image in enumerate(images):
            recorder.add_frame(FrameEvent(index=i, image=image, key="W", t_video=i / 16))
    video = tmp_path / "rec" / "video.mp4"
    data = video.read_bytes()
    video.write_bytes(data[: len(data) // 2])  # fragmented: the first half still decodes
    events = collect(ReplaySource(read_rollout_dir(tmp_path / "rec")))
    frames = [e for e in events if isinstance(e, FrameEvent)]
    error, end = _fatal_end(events)
    assert 0 < len(frames) < 64 and end.frames == len(frames)
    assert str(video) in error.message and f"frame {len(frames)}" in error.message
    assert end.reason == error.message
    assert all(np.array_equal(f.image, images[f.index]) for f in frames)


def test_action_log_longer_than_video_ends_incomplete(tmp_path: Path) -> None:
    d = make_rollout_dir(tmp_path / "ep", ["W"] * 12, video_frames=9)
    events = collect(ReplaySource(read_rollout_dir(d)))
    error, end = _fatal_end(events)
    assert end.frames == 9
    video = d / "video.mp4"
    assert error.message == f"{video}: the video ends after 9 of 12 frames"


def test_action_log_shorter_than_video_is_refused(tmp_path: Path) -> None:
    d = make_rollout_dir(tmp_path / "ep", ["W"] * 8, video_frames=10)
    with pytest.raises(BadInputError) as err:
        read_rollout_dir(d)
    assert err.value.source == str(d / "actions.jsonl")
    assert "8 frames in the log but 10 in video.mp4" in str(err.value)


def test_unknown_key_names_the_line(tmp_path: Path) -> None:
    d = make_rollout_dir(tmp_path / "ep", ["W", "W", "A"])
    write_actions(d, ["W", "W", "X"])
    with pytest.raises(BadInputError, match=r"actions\.jsonl: unknown key 'X' at line 3"):
        read_rollout_dir(d)


def test_frames_must_be_contiguous(tmp_path: Path) -> None:
    d = make_rollout_dir(tmp_path / "ep", ["W", "W"])
    (d / "actions.jsonl").write_text('{"frame": 0, "key": "W"}\n{"frame": 2, "key": "W"}\n')
    with pytest.raises(BadInputError, match=r"actions\.jsonl: line 2: frame 2, expected 1"):
        read_rollout_dir(d)


def test_nan_pose_names_file_and_frame(tmp_path: Path) -> None:
    d = make_rollout_dir(tmp_path / "ep", ["W"] * 6)
    poses = np.tile(np.eye(4), (6, 1, 1))
    poses[4, 1, 3] = np.nan
    np.save(d / "poses.npy", poses)
    assert _problems(d) == [(d / "poses.npy", "non-finite pose at frame 4", "poses")]
    np.save(d / "poses.npy", poses[:5])
    assert _problems(d) == [(d / "poses.npy", "5 poses for 6 frames", "poses")]
    assert read_rollout_dir(d).sidecars.poses is None  # type: ignore[union-attr]


def _problems(d: Path) -> list[tuple[Path, str, str]]:
    """What the rollout reader leaves out: an unusable sidecar never refuses the episode."""
    sidecars = read_rollout_dir(d).sidecars
    assert sidecars is not None
    return [(p.path, p.problem, p.spoils) for p in sidecars.problems]


def test_bad_sidecar_shapes(tmp_path: Path) -> None:
    d = make_rollout_dir(tmp_path / "ep", ["W"] * 3)
    np.save(d / "intrinsics.npy", np.eye(4))
    [(path, problem, spoils)] = _problems(d)
    assert path == d / "intrinsics.npy" and problem.startswith("shape (4, 4)") and spoils == "depth"
    np.save(d / "intrinsics.npy", np.full((3, 3), np.nan))
    assert _problems(d) == [(d / "intrinsics.npy", "non-finite values", "depth")]
    (d / "intrinsics.npy").unlink()
    np.save(d / "depth_metric.npy", np.ones((3, 4, 5), np.float32))
    np.savez_compressed(d / "depth_valid_mask.npz", mask=np.ones((3, 4, 6), bool))
    [(path, problem, _)] = _problems(d)
    assert path == d / "depth_valid_mask.npz" and problem.startswith("mask shape")
    assert read_rollout_dir(d).sidecars.depth is None  # type: ignore[union-attr]
    np.save(d / "depth_metric.npy", np.ones((3, 4), np.float32))
    [(path, problem, _)] = _problems(d)
    assert path == d / "depth_metric.npy" and problem.startswith("shape (3, 4)")


def test_vipe_depth_mask_marks_invalid_pixels_nan(tmp_path: Path) -> None:
    d = make_rollout_dir(tmp_path / "ep", ["W"] * 5)
    depth = np.arange(5 * 4 * 6, dtype=np.float64).reshape(5, 4, 6) + 1  # float64 → float32
    depth[2, 0, 0] = np.inf
    valid = np.ones(depth.shape, bool)
    valid[3, 1, 2] = False
    np.save(d / "depth_metric.npy", depth)
    np.savez_compressed(d / "depth_valid_mask.npz", mask=valid)
    frames = [e for e in collect(ReplaySource(read_rollout_dir(d))) if isinstance(e, FrameEvent)]
    got = np.stack([f.depth for f in frames if f.depth is not None])
    assert got.dtype == np.float32 and got.shape == (5, 4, 6)
    assert np.isnan(got[3, 1, 2]) and np.isnan(got).sum() == 1
    assert got[2, 0, 0] == np.inf  # not masked: passes through
    assert np.array_equal(np.where(valid, depth, np.nan).astype(np.float32), got, equal_nan=True)


def test_png_frames_of_mixed_size(tmp_path: Path) -> None:
    d = tmp_path / "ep"
    write_meta(d)
    write_actions(d, ["W"] * 4)
    (d / "frames").mkdir()
    for i in range(4):
        h, w = (24, 32) if i != 2 else (20, 32)
        img = np.full((h, w, 3), 10 * i, np.uint8)
        cv2.imwrite(str(d / "frames" / f"{i:06d}.png"), img)
    events = collect(ReplaySource(read_rollout_dir(d)))
    error, end = _fatal_end(events)
    assert end.frames == 2
    assert error.message == (
        f"{d / 'frames'}: frame 2 is 20×32, but the episode's frames are 24×32 (size changed)"
    )


def test_png_frames_read_as_rgb_and_bad_names_refused(tmp_path: Path) -> None:
    d = tmp_path / "ep"
    write_meta(d)
    write_actions(d, ["W"] * 2)
    (d / "frames").mkdir()
    bgr = np.zeros((16, 16, 3), np.uint8)  # the smallest frame the flow takes
    bgr[..., 0] = 255  # blue in OpenCV's order
    for i in range(2):
        cv2.imwrite(str(d / "frames" / f"{i:06d}.png"), bgr)
    frames = [e for e in collect(ReplaySource(read_rollout_dir(d))) if isinstance(e, FrameEvent)]
    assert frames[0].image[0, 0].tolist() == [0, 0, 255]
    (d / "frames" / "frame_2.png").write_bytes(b"")
    with pytest.raises(BadInputError, match=r"frame_2\.png: not a frame file"):
        read_rollout_dir(d)


def test_meta_json_is_checked(tmp_path: Path) -> None:
    d = make_rollout_dir(tmp_path / "ep", ["W"])
    (d / "meta.json").write_text(
        json.dumps({"format": "streameval.rollout/1", "model": "m", "suite": "s"})
    )
    with pytest.raises(BadInputError, match=r"meta\.json: fps None"):
        read_rollout_dir(d)
    write_meta(d, width=99)
    with pytest.raises(BadInputError, match=r"meta\.json: width 99 but video\.mp4 has 32"):
        read_rollout_dir(d)


def test_not_a_video_is_refused(tmp_path: Path) -> None:
    d = make_rollout_dir(tmp_path / "ep", ["W"])
    (d / "video.mp4").write_bytes(b"not a video at all" * 10)
    with pytest.raises(BadInputError, match=r"video\.mp4: cannot open video"):
        read_rollout_dir(d)


def test_open_rollouts_keeps_the_good_ones(tmp_path: Path) -> None:
    good = make_rollout_dir(tmp_path / "good", ["W"] * 3)
    bad = make_rollout_dir(tmp_path / "bad", ["W"] * 3)
    write_actions(bad, ["W", "Q", "W"])
    rollouts, errors = open_rollouts([good, bad, tmp_path / "missing"])
    assert [r.path for r in rollouts] == [good]
    assert [e.source for e in errors] == [str(bad / "actions.jsonl"), str(tmp_path / "missing")]
    # a directory of rollout directories: both found, the bad one reported, the good one kept
    rollouts, errors = open_rollouts([tmp_path])
    assert [r.path for r in rollouts] == [good] and len(errors) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    rollouts, errors = open_rollouts([empty])
    assert rollouts == [] and "no rollouts found" in str(errors[0])


def test_video_file_without_delivery_name(tmp_path: Path) -> None:
    video = write_video(tmp_path / "clip.mkv", count=3)
    rollouts, errors = open_rollouts([video, tmp_path / "notes.txt"])
    assert rollouts == [] and errors[0].source == str(video)


class _Exploding:
    """A frame store whose third frame raises something unexpected."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> Iterator[npt.NDArray[np.uint8]]:
        for i in range(5):
            if i == 2:
                raise RuntimeError("disk on fire")
            yield np.zeros((24, 32, 3), np.uint8)


def test_unexpected_failure_becomes_a_fatal_event(tmp_path: Path) -> None:
    rollout = dataclasses.replace(
        read_rollout_dir(make_rollout_dir(tmp_path / "ep", ["W"] * 5)),
        frames=_Exploding(tmp_path / "ep" / "video.mp4"),
        keys_sent=(KeySent("W", 0, 1.0), KeySent("S", 4, 2.0)),
    )
    events = collect(ReplaySource(rollout))
    error, end = _fatal_end(events)
    assert end.frames == 2 and "frame 2: RuntimeError: disk on fire" in error.message
    # the keystroke meant for a frame that never came is still delivered, before the end
    assert events[-3] == KeySent("S", 4, 2.0)

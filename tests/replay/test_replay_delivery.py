"""The published delivery layout ``<MODEL>/<image>_<action>.mp4``
(docs/methods.md#suites)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streameval.replay import ReplaySource, open_rollouts, parse_delivery_name, read_delivery

from streameval.core.events import EpisodeEnd, EpisodeStart, FrameEvent
from streameval.errors import BadInputError
from tests.replay.replay_synth import collect, write_video


def test_delivery_keys_split_equally_at_native_fps(tmp_path: Path) -> None:
    video = write_video(tmp_path / "MODELX" / "016_014.mp4", count=16 * 60, size=(40, 24), fps=16)
    rollout = read_delivery(video)
    assert (rollout.model, rollout.suite, rollout.episode) == (
        "MODELX",
        "worldmark",
        "MODELX/016_014",
    )
    assert (rollout.fps, rollout.width, rollout.height) == (16.0, 40, 24)
    segments = rollout.schedule.segments()
    assert [s.key for s in segments] == ["A", "D", "A"]
    assert [(s.start, s.end) for s in segments] == [(0, 320), (320, 640), (640, 960)]
    assert rollout.frame_count == 960
    assert rollout.frame_keys[319:321] == ("A", "D")

    events = collect(ReplaySource(rollout))
    start = events[0]
    assert isinstance(start, EpisodeStart) and start.info.fps == 16.0
    frames = [e for e in events if isinstance(e, FrameEvent)]
    assert len(frames) == 960 and frames[640].key == "A" and frames[639].key == "D"
    assert frames[10].t_video == 10 / 16
    assert events[-1] == EpisodeEnd(frames=960, complete=True)


def test_delivery_keeps_its_own_fps(tmp_path: Path) -> None:
    video = write_video(tmp_path / "M24" / "003_006.mp4", count=24 * 40, fps=24)
    rollout = read_delivery(video)
    assert rollout.fps == 24.0
    assert rollout.schedule.keys == ("W", "S")
    assert rollout.schedule.boundaries == (0, 480, 960)


@pytest.mark.parametrize("frames", [16 * 18, 16 * 19, 16 * 22])  # 18 s and 22 s: the edges
def test_duration_within_ten_percent_is_accepted(tmp_path: Path, frames: int) -> None:
    """Action 1 (W) is one key of 20 s: 18–22 s are read as they are, every frame kept and
    the one segment spanning them all, not cut or stretched to 20 s."""
    rollout = read_delivery(write_video(tmp_path / "M" / "001_001.mp4", count=frames, fps=16))
    assert (rollout.episode, rollout.fps, rollout.frame_count) == ("M/001_001", 16.0, frames)
    assert rollout.schedule.keys == ("W",)
    assert rollout.schedule.boundaries == (0, frames)
    events = collect(ReplaySource(rollout))
    assert sum(isinstance(e, FrameEvent) for e in events) == frames
    assert events[-1] == EpisodeEnd(frames=frames, complete=True)


@pytest.mark.parametrize(
    ("frames", "duration"), [(16 * 16, "16.00"), (16 * 18 - 1, "17.94"), (16 * 22 + 1, "22.06")]
)
def test_duration_off_by_more_than_ten_percent_is_refused(
    tmp_path: Path, frames: int, duration: str
) -> None:
    video = write_video(tmp_path / "M" / "001_001.mp4", count=frames, fps=16)
    with pytest.raises(BadInputError) as err:
        read_delivery(video)
    assert err.value.source == str(video)
    assert f"duration {duration} s" in str(err.value)
    assert "expected 20 s ± 10%" in str(err.value)


def test_bad_names_are_refused_naming_the_file(tmp_path: Path) -> None:
    foo = write_video(tmp_path / "M" / "foo.mp4", count=4)
    with pytest.raises(BadInputError, match=r"foo\.mp4: not a delivery name"):
        read_delivery(foo)
    with pytest.raises(BadInputError, match=r"016_099\.mp4: unknown worldmark action id 99"):
        parse_delivery_name(tmp_path / "M" / "016_099.mp4")
    name = parse_delivery_name(Path("016_014.mp4"))
    assert (name.image, name.action, name.keys) == (16, 14, ("A", "D", "A"))


def test_model_directory_is_read_in_name_order_with_sidecars(tmp_path: Path) -> None:
    model = tmp_path / "MODELY"
    write_video(model / "002_001.mp4", count=16 * 20)
    write_video(model / "001_004.mp4", count=16 * 20)
    write_video(model / "foo.mp4", count=4)
    poses = np.tile(np.eye(4), (320, 1, 1))
    poses[:, 0, 3] = np.arange(320)
    (model / "001_004").mkdir()
    np.save(model / "001_004" / "poses.npy", poses)
    rollouts, errors = open_rollouts([model])
    assert [r.episode for r in rollouts] == ["MODELY/001_004", "MODELY/002_001"]
    assert len(errors) == 1 and errors[0].source == str(model / "foo.mp4")
    assert rollouts[0].sidecars is not None and rollouts[0].sidecars.poses is not None
    assert rollouts[1].sidecars is None
    frames = [e for e in collect(ReplaySource(rollouts[0])) if isinstance(e, FrameEvent)]
    assert frames[5].pose is not None and frames[5].pose[0, 3] == 5.0

    # the root of a delivery (several model directories) expands two levels down
    rollouts, _ = open_rollouts([tmp_path])
    assert [r.episode for r in rollouts] == ["MODELY/001_004", "MODELY/002_001"]


@pytest.mark.parametrize(
    ("folder", "model", "set_name"),
    [
        ("real/first/ALAYAWORLD", "ALAYAWORLD", "first_view/real"),  # canonical
        ("0721_video_all/ALAYA_WORLD_third_style", "ALAYA_WORLD", "third_view/style"),  # flat
    ],
)
def test_a_delivery_in_worldmark_layouts_is_its_case(
    tmp_path: Path, folder: str, model: str, set_name: str
) -> None:
    """Both layouts of WorldMark's output spec name the set: the delivery replays as that
    case, under the name and into the folder a live run of the case uses."""
    from streameval.runs.builders import rollout_results_dir

    rollout = read_delivery(write_video(tmp_path / folder / "002_006.mp4", count=16 * 40))
    assert (rollout.model, rollout.episode) == (model, "002_006")
    case = rollout.meta["case"]
    assert (case["name"], case["set"], case["image"], case["action"]) == (
        "002_006",
        set_name,
        "002",
        6,
    )
    assert case["keys"] == "WS" and case["image_sha256"] is None
    out = tmp_path / "out"
    expected = out / model / set_name / "002_006"
    assert rollout_results_dir(out, rollout) == expected
    plain = read_delivery(write_video(tmp_path / "M" / "002_006.mp4", count=16 * 40))
    assert plain.episode == "M/002_006" and "case" not in plain.meta

"""Adapter for a common layout that is not ours: one video beside a per-frame key list.

    EPISODE_DIR/
        clip.mp4        exactly one video (any name, any container PyAV decodes)
        actions.json    a JSON list with one key per frame: ["W", "W", "A", ..., "-"]
     or actions.npy     (T, 6) one-hot rows in W S A D L R order (all zeros = no key)
        poses.npy ...   optional ViPE-layout sidecars, as in a rollout directory

There is no ``meta.json``: the fps and size are the video's own, the model is the parent
directory's name, the episode ``<parent>/<dir>``, and the suite ``custom``. There must be one key
per video frame; a list shorter than the video is refused (as with ``actions.jsonl``), a video
shorter than the list streams the frames it has and is marked incomplete.
"""

from __future__ import annotations

from pathlib import Path

from streameval.replay.actionlog import ActionLog, read_actions_json, read_actions_onehot
from streameval.replay.frames import VideoFrames, probe_video
from streameval.replay.layout import ADAPTER_ACTIONS_JSON, ADAPTER_ACTIONS_NPY, META, is_video_file
from streameval.replay.rollout import Rollout, check_log_covers_video, schedule_from_keys
from streameval.replay.sidecars import load_sidecars

from streameval.errors import BadInputError
from streameval.inputs.numbers import FPS, check_frame_count

SUITE = "custom"


def is_adapter_dir(directory: Path) -> bool:
    """A directory in this layout: a key list and no ``meta.json`` (which would make it ours)."""
    return not (directory / META).exists() and (
        (directory / ADAPTER_ACTIONS_JSON).is_file() or (directory / ADAPTER_ACTIONS_NPY).is_file()
    )


def read_adapter_dir(directory: Path) -> Rollout:
    """Read a video + key-list directory; raise ``BadInputError`` naming the file at fault."""
    json_path, npy_path = directory / ADAPTER_ACTIONS_JSON, directory / ADAPTER_ACTIONS_NPY
    if json_path.is_file() and npy_path.is_file():
        raise BadInputError(directory, f"both {json_path.name} and {npy_path.name}: keep one")
    actions_path = json_path if json_path.is_file() else npy_path
    log: ActionLog = (
        read_actions_json(actions_path)
        if actions_path == json_path
        else read_actions_onehot(actions_path)
    )
    videos = sorted(p for p in directory.iterdir() if is_video_file(p))
    if len(videos) != 1:
        found = ", ".join(p.name for p in videos) or "none"
        raise BadInputError(
            directory, f"expected exactly one video beside {actions_path.name}, found {found}"
        )
    video = videos[0]
    probe = probe_video(video)
    if probe.fps is None or probe.fps <= 0:
        raise BadInputError(video, "the video stream has no frame rate")
    FPS.check(probe.fps, video)
    check_log_covers_video(actions_path, len(log), video, probe.frames)
    check_frame_count(len(log), actions_path)
    model = directory.absolute().parent.name
    return Rollout(
        path=directory,
        layout="adapter",
        episode=f"{model}/{directory.name}",
        model=model,
        suite=SUITE,
        fps=probe.fps,
        width=probe.width,
        height=probe.height,
        frames=VideoFrames(video),
        frame_keys=log.keys,
        schedule=schedule_from_keys(log.keys, probe.fps),
        sidecars=load_sidecars(directory, len(log)),
        meta={
            "layout": "adapter",
            "actions": actions_path.name,
            "video": video.name,
            "codec": probe.codec,
        },
    )

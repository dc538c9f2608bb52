"""The published worldmark delivery layout: ``<MODEL>/<image:03d>_<action:03d>.mp4``
(docs/methods.md#suites).

There is no action log: the keys come from the worldmark action id in the file name and the
video's duration is split equally among them (``Schedule.split_equally``). The frame rate and
size are the video's own (models keep their native fps, docs/methods.md#real-frame-rate), the model
name is the parent directory's name, the suite is ``worldmark``, the episode
``<MODEL>/<image>_<action>``. In either layout of WorldMark's output spec, which names the set
(``real/first/MODEL/`` or ``…_video_all/MODEL_first_real/``), the delivery is that case of
that set: episode ``<image>_<action>``, a ``case`` record in its metadata, results in
``OUT/<MODEL>/first_view/real/<image>_<action>/`` as a live run of the case.

A delivery is valid when its duration is 20 s × keys within ±10 %; otherwise the file is refused
with both durations in the message.

Optional sidecars (our convention, same file names as the rollout directory): a directory named
after the video's stem beside it, e.g. ``MODEL/016_014/poses.npy``, ``intrinsics.npy``,
``depth_metric.npy``, ``depth_valid_mask.npz`` (ViPE layout, one entry per video frame).

**An action log beside it** (``MODEL/016_014/actions.jsonl``, one line per frame as in a
rollout directory; ``streameval export --format worldmark`` writes it with the recording's
own): the keys are the log's, frame by frame, not the equal split, so the delivery is scored
on the segments it was recorded with, and no duration check applies (the split it guards is
not used). Its keys must run through the action id's keys in order. ``keys.jsonl`` and
``chunks.jsonl`` beside it are read as a rollout's are, and ``recording.json`` carries what
the live run's ``meta.json`` says of its session (``LIVE_KEYS``: the perception plan, so the
replay perceives the frames the live run perceived; the session kind the real-time metrics
judge; the stream's received frames; the first-frame check) and whether the recording
completed (``complete``, ``reason``): an export replays to the run's own scores.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from streameval.protocol.schedule import Schedule
from streameval.protocol.suites import (
    WORLDMARK_DURATION_TOLERANCE,
    WORLDMARK_SECONDS_PER_KEY,
    worldmark_keys,
)
from streameval.replay.actionlog import read_actions_jsonl, read_chunks_jsonl, read_keys_jsonl
from streameval.replay.frames import VideoFrames, probe_video
from streameval.replay.layout import ACTIONS, CHUNKS, KEYS, present, read_json
from streameval.replay.rollout import Rollout, check_log_covers_video, schedule_from_keys
from streameval.replay.sidecars import load_sidecars

from streameval.constants import EQUAL_SPLIT_KEYS
from streameval.errors import BadInputError, UnknownActionError
from streameval.inputs.numbers import FPS

SUITE = "worldmark"
# what a recording's meta.json says of its live session, beside an exported delivery:
# the perception plan (``engine.perception_plan``), the session kind
# (``engine.episode_stats.session_kind``), a stream's received frames, the first-frame check
LIVE_RECORD = "recording.json"
LIVE_KEYS = ("perception", "session", "received_frames", "conditioning")
_NAME = re.compile(r"^(\d+)_(\d+)$")
# WorldMark's output spec names a delivery's set in its folders, with the view shortened to
# "first"/"third": canonical ``{domain}/{view}/{MODEL}/``, flat ``{MODEL}_{view}_{domain}/``.
VIEWS = ("first", "third")
DOMAINS = ("real", "style")
_FLAT_FOLDER = re.compile(rf"^(.+)_({'|'.join(VIEWS)})_({'|'.join(DOMAINS)})$")


@dataclass(frozen=True, slots=True)
class DeliveryName:
    """What a delivery's file name says: the scene image and the worldmark action sequence."""

    image: int
    action: int
    keys: tuple[str, ...]


def parse_delivery_name(path: Path) -> DeliveryName:
    """``016_014.mp4`` → image 16, action 14, keys A D A; anything else names the file."""
    match = _NAME.match(path.stem)
    if match is None:
        raise BadInputError(
            path, "not a delivery name (expected <image>_<action>.mp4, e.g. 016_014.mp4)"
        )
    image, action = int(match.group(1)), int(match.group(2))
    try:
        keys = worldmark_keys(action)
    except UnknownActionError as exc:
        raise BadInputError(path, str(exc)) from None
    return DeliveryName(image, action, keys)


def delivery_set(path: Path) -> tuple[str, str] | None:
    """(model, set) of a delivery video in one of WorldMark's two layouts —
    ``real/first/MODEL/000_006.mp4`` or ``0721_video_all/MODEL_first_real/000_006.mp4`` — with
    the set named as ``arena_inputs`` names it (``first_view/real``); None for any other
    folder (the model is then the folder's name and the set unknown)."""
    folder = path.absolute().parent
    view, domain = folder.parent.name, folder.parent.parent.name
    if view in VIEWS and domain in DOMAINS:
        return folder.name, f"{view}_view/{domain}"
    flat = _FLAT_FOLDER.match(folder.name)
    if flat is not None:
        return flat.group(1), f"{flat.group(2)}_view/{flat.group(3)}"
    return None


def read_delivery(path: Path) -> Rollout:
    """Read and validate one delivery video; raise ``BadInputError`` naming it."""
    name = parse_delivery_name(path)
    probe = probe_video(path)
    if probe.fps is None or probe.fps <= 0:
        raise BadInputError(path, "the video stream has no frame rate")
    FPS.check(probe.fps, path)  # a container may claim 1e-9 fps: refused, never looped over
    if probe.frames <= 0:
        raise BadInputError(path, "no frames")
    duration = probe.frames / probe.fps
    expected = WORLDMARK_SECONDS_PER_KEY * len(name.keys)
    sidecar_dir = path.with_suffix("")
    if present(sidecar_dir / ACTIONS):
        return _logged(path, name, probe.fps, probe.frames, probe.width, probe.height, probe.codec)
    if abs(duration - expected) > WORLDMARK_DURATION_TOLERANCE * expected:
        raise BadInputError(
            path,
            f"duration {duration:.2f} s ({probe.frames} frames at {probe.fps:g} fps), expected "
            f"{expected:g} s ± {WORLDMARK_DURATION_TOLERANCE:.0%} "
            f"({len(name.keys)} keys × {WORLDMARK_SECONDS_PER_KEY:g} s)",
        )
    schedule = Schedule.split_equally(name.keys, probe.frames, probe.fps)
    model, episode, case = _names(path, name)
    return Rollout(
        path=path,
        layout="delivery",
        episode=episode,
        model=model,
        suite=SUITE,
        fps=probe.fps,
        width=probe.width,
        height=probe.height,
        frames=VideoFrames(path),
        frame_keys=tuple(schedule.frame_keys()),
        schedule=schedule,
        sidecars=load_sidecars(sidecar_dir, probe.frames) if sidecar_dir.is_dir() else None,
        meta={
            "layout": "delivery",
            "image": name.image,
            "action": name.action,
            "keys": "".join(name.keys),
            # no action log: scored on the reference's equal split of the signal time
            # (docs/methods.md#control-segments)
            EQUAL_SPLIT_KEYS: list(name.keys),
            "codec": probe.codec,
            "duration_s": duration,
            **case,
        },
    )


def _names(path: Path, name: DeliveryName) -> tuple[str, str, dict[str, object]]:
    """(model, episode, ``{"case": ...}`` or empty) of a delivery, from its folders."""
    model = path.absolute().parent.name
    in_set = delivery_set(path)
    if in_set is None:
        return model, f"{model}/{path.stem}", {}
    model, set_name = in_set  # the same case names and folders as a live run of the cases
    case = {
        "name": path.stem,
        "set": set_name,
        "image": f"{name.image:03d}",
        "action": name.action,
        "keys": "".join(name.keys),
        "image_sha256": None,
        "prompt_sha256": None,
    }
    return model, path.stem, {"case": case}


def _logged(
    path: Path, name: DeliveryName, fps: float, frames: int, width: int, height: int, codec: str
) -> Rollout:
    """A delivery with its action log beside it (module docstring)."""
    sidecar_dir = path.with_suffix("")
    log_path = sidecar_dir / ACTIONS
    log = read_actions_jsonl(log_path)
    check_log_covers_video(log_path, len(log), path, frames)
    schedule = schedule_from_keys(log.keys, fps)
    logged = tuple(segment.key for segment in schedule.segments())
    if logged != name.keys:
        raise BadInputError(
            log_path,
            f"its keys run {''.join(logged)}, but action {name.action} is {''.join(name.keys)}",
        )
    model, episode, case = _names(path, name)
    live: dict[str, object] = {}
    live_path = sidecar_dir / LIVE_RECORD
    if present(live_path):
        found = read_json(live_path)
        if not isinstance(found, dict):
            raise BadInputError(live_path, "is not a JSON object")
        live = found
    extra = {key: live[key] for key in LIVE_KEYS if key in live}
    reason = live.get("reason")
    keys_path, chunks_path = sidecar_dir / KEYS, sidecar_dir / CHUNKS
    return Rollout(
        path=path,
        layout="delivery",
        episode=episode,
        model=model,
        suite=SUITE,
        fps=fps,
        width=width,
        height=height,
        frames=VideoFrames(path),
        frame_keys=log.keys,
        schedule=schedule,
        t_wall=log.t_wall,
        keys_sent=read_keys_jsonl(keys_path) if present(keys_path) else (),
        chunks=read_chunks_jsonl(chunks_path) if present(chunks_path) else (),
        sidecars=load_sidecars(sidecar_dir, len(log)),
        complete=live.get("complete", True) is not False,  # a run that ended early says so
        reason=reason if isinstance(reason, str) else None,
        meta={
            "layout": "delivery",
            "image": name.image,
            "action": name.action,
            "keys": "".join(name.keys),
            "action_log": str(log_path),
            "codec": codec,
            "duration_s": frames / fps,
            **case,
            **extra,
        },
    )

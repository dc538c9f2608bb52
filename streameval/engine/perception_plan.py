"""Which frames perception samples, and which a live run dropped: kept with a recording so that
its replay perceives exactly what the live run perceived (so that a wall-clock recording
replays bit-identically, docs/serve-formats.md#alignment-and-recordings).

Two things make a live wall-clock episode differ from a replay of its recording unless they are
written down. The motion-type fit frames and the Global Memory views are planned when the
episode starts, from the schedule (for ``--clock wall`` the *nominal* one: seconds per key ×
the server's nominal fps), while the replay only knows the frames that arrived; and a live
source's frames are dropped when perception falls behind (counted, NaN gaps), which a replay
flat out never does. So the pipeline reports the plan it used and the frames it dropped in the
episode's outcome, the recorder writes them to ``meta.json`` under ``"perception"``, and a
replay of that directory plans and drops the same frames. Rollouts without the entry (other
tools' deliveries, older recordings) are planned from their own keys as before.

A live ``--clock wall`` episode cannot plan its fit frames at the start at all: a server that
plays slower or faster than its nominal rate makes every segment shorter or longer than
``seconds per key × nominal fps``, and the reference's picks (25 %–90 % of the segment) follow
the segment's real ends. Its plan is *adaptive*: perception samples the fit grid at every
lateral or yaw frame, the pipeline keeps a closed segment's samples only at its picks
(``keep_fit_samples``: memory stays bounded by one segment), and the picks of the frames that
arrived are what the recording keeps. A depth network is not consulted for those fits (it
would have to run on every frame; depth the frames carry is used), and the recording says so
(``fit_depth_network``), so its replay does the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from streameval.core.episode.motion import FitSample
from streameval.core.events import EpisodeInfo
from streameval.engine.scoring import fit_plan
from streameval.inputs.numbers import MAX_EPISODE_FRAMES
from streameval.metrics.fits.geometry import select_views
from streameval.metrics.fits.motion_type import fit_frames, fit_limit_settled
from streameval.metrics.segments import equal_split_keys
from streameval.protocol.keys import FAMILY
from streameval.protocol.schedule import segments_from_keys

PLAN_KEY = "perception"  # meta.json of a recording; EpisodeInfo.extra of its replay


@dataclass(frozen=True, slots=True)
class PerceptionPlan:
    """``fit_frames``: frames sampled for the motion-type fit; ``views``: Global Memory's
    views; ``dropped``: frames received but not perceived (a replay drops them too).

    ``adaptive``: the fit frames are not known in advance (a wall-clock episode): every lateral
    or yaw frame is sampled and ``fit_frames`` is filled in from the frames' own keys when it ends
    (``settled``). ``fit_depth_network``: whether a depth network may supply the fit's depth.
    """

    fit_frames: frozenset[int]
    views: frozenset[int]
    dropped: frozenset[int] = frozenset()
    recorded: bool = False  # read from a recording rather than planned from the schedule
    adaptive: bool = False
    fit_depth_network: bool = True

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "fit_frames": sorted(self.fit_frames),
            "views": sorted(self.views),
            "dropped_frames": sorted(self.dropped),
        }
        if not self.fit_depth_network:
            doc["fit_depth_network"] = False
        return doc


def _frames(value: object) -> frozenset[int] | None:
    """A list of frame indices, or None when ``value`` is not one (then the entry is ignored
    as a whole: half a plan would perceive neither run's frames)."""
    if not isinstance(value, list) or len(value) > MAX_EPISODE_FRAMES:
        return None
    if not all(isinstance(f, int) and not isinstance(f, bool) for f in value):
        return None
    if not all(0 <= f < MAX_EPISODE_FRAMES for f in value):
        return None
    return frozenset(value)


def recorded_plan(extra: Mapping[str, Any]) -> PerceptionPlan | None:
    """The plan a recording's ``meta.json`` carries, or None (absent or malformed)."""
    entry = extra.get(PLAN_KEY)
    if not isinstance(entry, dict):
        return None
    parts = [_frames(entry.get(k)) for k in ("fit_frames", "views", "dropped_frames")]
    fit, views, dropped = parts
    network = entry.get("fit_depth_network", True)
    if fit is None or views is None or dropped is None or not isinstance(network, bool):
        return None
    return PerceptionPlan(fit, views, dropped, recorded=True, fit_depth_network=network)


def is_wall_clock(info: EpisodeInfo) -> bool:
    """A live episode whose keys were held for wall-clock seconds (``transports.base``)."""
    interactivity = info.extra.get("interactivity")
    return isinstance(interactivity, dict) and interactivity.get("clock") == "wall"


def plan_for(info: EpisodeInfo) -> PerceptionPlan:
    """What perception samples in this episode: a recording's own plan when it has one, else
    the fit plan of ``engine.scoring.fit_plan`` (the same one scoring reads back) and
    ``select_views`` on the planned schedule."""
    recorded = recorded_plan(info.extra)
    if recorded is not None:
        return recorded
    if is_wall_clock(info):
        return PerceptionPlan(
            fit_frames=frozenset(),
            views=frozenset(select_views(info.schedule.total_frames, info.fps)),
            adaptive=True,
            fit_depth_network=False,
        )
    fits = fit_plan(equal_split_keys(info.extra), info.schedule.frame_keys(), info.fps)
    return PerceptionPlan(
        fit_frames=frozenset(f for frames in fits.values() for f in frames),
        views=frozenset(select_views(info.schedule.total_frames, info.fps)),
    )


def with_dropped(plan: PerceptionPlan, dropped: Iterable[int]) -> PerceptionPlan:
    """``plan`` with the frames the run actually dropped (what its recording keeps)."""
    return replace(plan, dropped=frozenset(dropped))


def settled(plan: PerceptionPlan, frame_keys: list[str], fps: float) -> PerceptionPlan:
    """An adaptive plan with the fit frames of the frames that arrived (what the episode's
    scoring reads, ``engine.scoring.fit_plan``); other plans as they are."""
    if not plan.adaptive:
        return plan
    fits = fit_plan(None, frame_keys, fps)
    frames = frozenset(f for picks in fits.values() for f in picks)
    return replace(plan, fit_frames=frames, adaptive=False)


def keep_fit_samples(
    samples: list[FitSample], frame_keys: list[str], fps: float, *, final: bool
) -> list[FitSample]:
    """The samples of an adaptive plan still needed: a closed lateral/yaw segment's at its
    picks, the open (last) segment's all; at the end (``final``) only picks. A closed
    segment whose last pick could still move (its 90 % point within 3 frames of the episode's
    current end: ``fit_limit_settled``) keeps all its samples until it settles."""
    wanted = fit_frames_wanted(frame_keys, fps, final=final)[1]
    return [s for s in samples if s.frame in wanted]


def fit_frames_wanted(
    frame_keys: list[str], fps: float, *, final: bool
) -> tuple[frozenset[int], frozenset[int]]:
    """``(picks, wanted)`` of an adaptive plan so far: the fit frames that can no longer change
    (a closed, settled segment's picks; at the end every segment's), and every frame whose
    sample is still needed (those, and all frames of segments not settled yet;
    ``keep_fit_samples``)."""
    n = len(frame_keys)
    segments = segments_from_keys(frame_keys)
    picks: set[int] = set()
    wanted: set[int] = set()
    for j, seg in enumerate(segments):
        if FAMILY.get(seg.key) not in ("lat", "yaw"):
            continue
        if final or (j < len(segments) - 1 and fit_limit_settled(seg.start, seg.end, n)):
            picks.update(fit_frames(seg.start, seg.end, fps, n))
        else:
            wanted.update(range(seg.start, seg.end))
    return frozenset(picks), frozenset(picks | wanted)

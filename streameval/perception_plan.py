"""Which frames perception samples, and which a live run dropped: kept with a recording so that
its replay perceives exactly what the live run perceived (issue 11: a wall-clock recording
replays bit-identically).

Two things make a live wall-clock episode differ from a replay of its recording unless they are
written down. The motion-type fit frames and the Global Memory views are planned when the
episode starts, from the schedule (for ``--clock wall`` the *nominal* one: seconds per key ×
the server's nominal fps), while the replay only knows the frames that arrived; and a live
source's frames are dropped when perception falls behind (counted, NaN gaps), which a replay
flat out never does. So the pipeline reports the plan it used and the frames it dropped in the
episode's outcome, the recorder writes them to ``meta.json`` under ``"perception"``, and a
replay of that directory plans and drops the same frames. Rollouts without the entry (other
tools' deliveries, older recordings) are planned from their own keys as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from streameval.constants import EQUAL_SPLIT_KEYS
from streameval.episode_scores import fit_plan
from streameval.events import EpisodeInfo
from streameval.fits.geometry import select_views

PLAN_KEY = "perception"  # meta.json of a recording; EpisodeInfo.extra of its replay
_MAX_FRAME = 10_000_000  # a frame index beyond any episode (inputs.numbers caps frame counts)


@dataclass(frozen=True, slots=True)
class PerceptionPlan:
    """``fit_frames``: frames sampled for the motion-type fit; ``views``: Global Memory's
    views; ``dropped``: frames received but not perceived (a replay drops them too)."""

    fit_frames: frozenset[int]
    views: frozenset[int]
    dropped: frozenset[int] = frozenset()
    recorded: bool = False  # read from a recording rather than planned from the schedule

    def to_json(self) -> dict[str, list[int]]:
        return {
            "fit_frames": sorted(self.fit_frames),
            "views": sorted(self.views),
            "dropped_frames": sorted(self.dropped),
        }


def equal_split_keys(info: EpisodeInfo) -> list[str] | None:
    """A delivery without an action log says so (``replay.delivery``): its keys."""
    keys = info.extra.get(EQUAL_SPLIT_KEYS)
    return [str(k) for k in keys] if isinstance(keys, list | tuple) and keys else None


def _frames(value: object) -> frozenset[int] | None:
    """A list of frame indices, or None when ``value`` is not one (then the entry is ignored
    as a whole: half a plan would perceive neither run's frames)."""
    if not isinstance(value, list) or len(value) > _MAX_FRAME:
        return None
    if not all(isinstance(f, int) and not isinstance(f, bool) for f in value):
        return None
    if not all(0 <= f < _MAX_FRAME for f in value):
        return None
    return frozenset(value)


def recorded_plan(extra: Mapping[str, Any]) -> PerceptionPlan | None:
    """The plan a recording's ``meta.json`` carries, or None (absent or malformed)."""
    entry = extra.get(PLAN_KEY)
    if not isinstance(entry, dict):
        return None
    parts = [_frames(entry.get(k)) for k in ("fit_frames", "views", "dropped_frames")]
    fit, views, dropped = parts
    if fit is None or views is None or dropped is None:
        return None
    return PerceptionPlan(fit, views, dropped, recorded=True)


def plan_for(info: EpisodeInfo) -> PerceptionPlan:
    """What perception samples in this episode: a recording's own plan when it has one, else
    the fit plan of ``episode_scores.fit_plan`` (the same one scoring reads back) and
    ``select_views`` on the planned schedule."""
    recorded = recorded_plan(info.extra)
    if recorded is not None:
        return recorded
    fits = fit_plan(equal_split_keys(info), info.schedule.frame_keys(), info.fps)
    return PerceptionPlan(
        fit_frames=frozenset(f for frames in fits.values() for f in frames),
        views=frozenset(select_views(info.schedule.total_frames, info.fps)),
    )


def with_dropped(plan: PerceptionPlan, dropped: Iterable[int]) -> PerceptionPlan:
    """``plan`` with the frames the run actually dropped (what its recording keeps)."""
    return PerceptionPlan(plan.fit_frames, plan.views, frozenset(dropped), plan.recorded)

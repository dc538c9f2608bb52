"""Recorded rollouts in, recorded rollouts out.

Read: ``open_rollouts(paths)`` expands command-line arguments (rollout directories, worldmark
deliveries ``<MODEL>/<image>_<action>.mp4``, model directories, video + key-list directories)
into validated ``Rollout`` descriptions plus one-line errors for the bad ones. Replay:
``ReplaySource(rollout, pace)`` streams a rollout through the same ``Source`` interface as a live
model, optionally paced by ``Pacer``. Record: ``Recorder`` writes a live episode as a rollout
directory whose replay is bit-identical.
"""

from streameval.replay.delivery import parse_delivery_name, read_delivery
from streameval.replay.discover import open_rollouts, read_rollout
from streameval.replay.pacer import Pacer, pace_for
from streameval.replay.recorder import Recorder
from streameval.replay.rollout import Rollout, read_rollout_dir
from streameval.replay.source import ReplaySource

__all__ = [
    "Pacer",
    "Recorder",
    "ReplaySource",
    "Rollout",
    "open_rollouts",
    "pace_for",
    "parse_delivery_name",
    "read_delivery",
    "read_rollout",
    "read_rollout_dir",
]

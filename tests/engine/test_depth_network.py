"""The depth-network path of docs/methods.md#motion-type-fit (frames without depth,
``--depth depth-anything``), end to end through the pipeline on a tiny randomly initialised
Depth-Anything."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from streameval.protocol.schedule import Schedule
from streameval.worlds.procedural_world import ProceduralWorld, WorldConfig

from streameval.engine.config import PipelineConfig
from streameval.errors import BackendUnavailableError
from streameval.transports.inprocess.driver import InProcessSource
from tests.engine.helpers import run

# The fit is what is checked: the world at 320×216, memory and imaging perception off, and
# torch on one thread (its second spins on two shared cores and adds CPU time, not speed).
CONFIG = PipelineConfig(cuts=None, embedding=None, gram=None, imaging=False)


class ImageOnly:
    fps = 16.0

    def __init__(self) -> None:
        self.world = ProceduralWorld(WorldConfig(width=320, height=216))

    def step(self, key: str) -> np.ndarray[Any, np.dtype[np.uint8]]:
        return self.world.step(key).image


def _source() -> InProcessSource:
    schedule = Schedule.per_key(["A", "L"], 4.0, 16.0)
    return InProcessSource(ImageOnly(), schedule, episode="e", model_name="m", suite="t")


def test_depth_network_feeds_the_motion_type_fit(
    tiny_depth_anything: Path, one_torch_thread: None
) -> None:
    config = replace(CONFIG, depth=f"depth-anything:{tiny_depth_anything}")
    outcome = run(_source(), config=config)
    fits = list(outcome.scores.motion_fits.values())
    assert fits and all(f is not None and f.method == "depth_parallax" for f in fits)
    assert outcome.complete


def test_missing_depth_weights_fail_before_the_episode(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailableError, match=r"config\.json"):
        run(_source(), config=replace(CONFIG, depth=f"depth-anything:{tmp_path}"))

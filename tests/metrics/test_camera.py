"""The geometry's camera (docs/methods.md#known-intrinsics): the model's intrinsics over the
case's over WorldMark's 70°, recorded where the scores use it; without intrinsics nothing
changes."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from streameval.protocol.schedule import Schedule
from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

from streameval.constants import ANALYSIS_WIDTH, FOV_DEG
from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.metrics.arc import px_per_degree
from streameval.metrics.fits.camera import (
    DEFAULT_CAMERA,
    camera_after_frame,
    camera_from_intrinsics,
    camera_of,
    case_camera,
)
from streameval.metrics.fits.motion_type import analysis_focal
from streameval.transports.inprocess.driver import InProcessSource


def test_the_default_is_worldmarks_70_degrees_to_the_bit() -> None:
    assert DEFAULT_CAMERA.fov_deg == FOV_DEG and DEFAULT_CAMERA.source == "default"
    assert DEFAULT_CAMERA.focal(640) == analysis_focal(640)
    assert DEFAULT_CAMERA.px_per_degree(ANALYSIS_WIDTH) == px_per_degree()
    assert camera_of({}) == DEFAULT_CAMERA
    assert camera_of({"camera": {"fov_deg": 500, "source": "model"}}) == DEFAULT_CAMERA


def test_intrinsics_give_the_field_of_view_the_model_rendered() -> None:
    f = (640 / 2) / math.tan(math.radians(121) / 2)
    k = np.array([[f, 0, 319.5], [0, f, 179.5], [0, 0, 1]])
    camera = camera_from_intrinsics(k, 640, "model")
    assert camera is not None and camera.fov_deg == pytest.approx(121.0)
    assert camera.focal(320) == pytest.approx(f / 2)  # the same camera on a smaller frame
    assert camera_from_intrinsics([f, f, 319.5, 179.5], 640, "case") == camera.__class__(
        camera.fov_deg, "case"
    )
    assert camera_from_intrinsics([[1, 2], [3, 4]], 640, "model") is None
    assert camera_from_intrinsics([-1.0, 1.0, 2.0, 2.0], 640, "model") is None
    # the model's first stated camera wins over the case's, and stays
    case = case_camera({"intrinsics": [900.0, 900.0, 511.0, 383.0], "image_size": [1024, 768]})
    assert case.source == "case" and case.fov_deg == pytest.approx(59.27, abs=0.01)
    after = camera_after_frame(case, k, 640)
    assert after.source == "model" and camera_after_frame(after, np.eye(3) * 50, 640) is after
    # no size recorded: the principal point at the centre gives it
    assert case_camera({"intrinsics": [900.0, 900.0, 511.5, 383.5]}).fov_deg == pytest.approx(
        case.fov_deg, abs=0.01
    )


class _WideWorld:
    """The procedural world at a 121° field of view, its frames with only image and
    (optionally) intrinsics: no depth, so the depth-free fit and its focal decide the type."""

    def __init__(self, send: bool) -> None:
        self.world = ProceduralWorld(world_config_for_defect("clean", fov_deg=121.0))
        self.fps, self.send = self.world.fps, send

    def step(self, key: str) -> object:
        frame = self.world.step(key)

        class Frame:
            image = frame.image
            intrinsics = frame.intrinsics if self.send else None

        return Frame()


# `make test` keeps the camera stated; the same world without intrinsics (70° assumed, as
# every published video) is `make test-long` (the parity tests cover the 70° road)
@pytest.mark.parametrize("send", [True, pytest.param(False, marks=pytest.mark.long)])
def test_a_clean_turn_on_a_wide_camera_that_states_it(send: bool) -> None:
    model = _WideWorld(send)
    schedule = Schedule.per_key(["L", "R"], 4.5, model.fps)
    source = InProcessSource(
        model, schedule, episode="e", model_name="m", suite="worldmark",
        width=model.world.width, height=model.world.height,
    )  # fmt: skip
    config = PipelineConfig(cuts="scenedetect-adaptive", embedding=None)
    outcome = asyncio.run(run_episode(source, config=config))
    accuracy = outcome.scores.metrics["direction_accuracy_rot"]
    assert accuracy.normalized is not None and accuracy.normalized >= 95
    camera = accuracy.details["camera"]
    if send:
        assert camera["source"] == "model" and camera["fov_deg"] == pytest.approx(121.0)
    else:
        assert camera == {"fov_deg": FOV_DEG, "source": "default"}

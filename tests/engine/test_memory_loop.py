"""memory_loop through the pipeline: WorldAtlas metrics in scores.json, rescore bit-identical,
and the CPU estimator taking over when the model sends no pose."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from streameval.protocol.memory_loop import memory_loop
from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

from streameval.core.observers import EpisodeObserver, EpisodeOutcome, Progress
from streameval.engine.config import PipelineConfig
from streameval.engine.rescore import rescore_dir
from streameval.metrics.worldatlas.revisit import return_gate
from streameval.transports.inprocess.driver import InProcessSource
from tests.engine.helpers import run

# The frames' own size (256×160) as the analysis frame: the gate, the scene F1 and the pose
# estimator read the poses and the frames, not the flow, which costs a quarter of the default's.
CONFIG = PipelineConfig(cuts="scenedetect-adaptive", analysis_width=256, analysis_height=160)

# one worker runs the module: its runs are made once per process and shared by its tests
pytestmark = pytest.mark.xdist_group("memory-loop")

NAMES = ("memory_return_gate", "keystroke_natet", "keystroke_nater", "memory_scene_f1")


class _NoPose:
    """The procedural world as most servers are: frames only."""

    def __init__(self, world: ProceduralWorld) -> None:
        self.world = world

    def step(self, key: str) -> np.ndarray:
        return np.asarray(self.world.step(key).image)


def _source(name: str, *, send_poses: bool, size: tuple[int, int] = (256, 160)) -> InProcessSource:
    loop = memory_loop(name, fps=24.0, seconds=6.0)
    config = replace(
        world_config_for_defect("clean"),
        width=size[0],
        height=size[1],
        fps=24.0,
        yaw_rate_deg=loop.yaw_rate_deg,
        forward_speed=loop.speed(2.0),
    )
    world = ProceduralWorld(config)
    model: Any = world if send_poses else _NoPose(world)
    return InProcessSource(
        model,
        loop.schedule(),
        episode=name,
        model_name="procedural-world",
        suite="memory_loop",
        width=size[0],
        height=size[1],
        trajectory=name,
    )


def test_memory_loop_scores_and_rescore(live_run: LiveRun) -> None:
    outcome, results, _ = live_run("yaw_loop_180")
    metrics = outcome.scores.metrics
    assert (
        metrics["memory_return_gate"].status == "official"
        and metrics["memory_return_gate"].raw == 1.0
    )
    assert metrics["keystroke_natet"].status == "not_applicable"  # an in-place yaw loop
    assert metrics["memory_scene_f1"].status == "official"
    assert (metrics["memory_scene_f1"].raw or 0) > 0.99
    doc = json.loads((results / "scores.json").read_text())
    assert doc["suite"] == "memory_loop"
    assert all(n in doc["metrics"] for n in NAMES)
    assert doc["metrics"]["memory_return_gate"]["details"]["pose_source"] == "model"
    assert rescore_dir(results).changed == []


def test_without_poses_the_cpu_estimator_decides_the_gate(tmp_path: Path) -> None:
    outcome = run(_source("yaw_loop_180", send_poses=False), tmp_path / "r", config=CONFIG)
    gate = outcome.scores.metrics["memory_return_gate"]
    assert gate.status == "official" and gate.raw == 1.0
    assert gate.details["pose_source"] == "cpu_estimator"
    assert gate.details["scale_is_degenerate"]  # pure rotation: no spurious translation
    scene = outcome.scores.metrics["memory_scene_f1"]
    assert scene.status == "not_applicable"  # no depth without a depth sidecar or model


class _GateStates(EpisodeObserver):
    """What the live scores say about the gate after every frame."""

    def __init__(self) -> None:
        self.states: dict[int, tuple[bool, bool]] = {}

    def on_progress(self, progress: Progress) -> None:
        gate = (progress.provisional or {}).get("memory_return_gate")
        if gate is not None:
            d = gate.details
            self.states[progress.frame] = (bool(d["departure_reached"]), bool(d["returned"]))


def _first(states: dict[int, tuple[bool, bool]], which: int) -> int | None:
    return next((f for f in sorted(states) if states[f][which]), None)


LiveRun = Callable[[str], tuple[EpisodeOutcome, Path, _GateStates]]


@pytest.fixture(scope="module")
def live_run(tmp_path_factory: pytest.TempPathFactory) -> LiveRun:
    """One run per trajectory (true poses, provisional scores after every frame), shared by
    the tests of the module: the yaw loop's is both the scored-and-rescored episode and the
    one whose live gate is followed (the final scores do not depend on how often the
    provisional ones are computed)."""
    runs: dict[str, tuple[EpisodeOutcome, Path, _GateStates]] = {}

    def get(name: str) -> tuple[EpisodeOutcome, Path, _GateStates]:
        if name not in runs:
            observer = _GateStates()
            results = tmp_path_factory.mktemp(name)
            config = replace(CONFIG, provisional_every_s=0.0)
            outcome = run(_source(name, send_poses=True), results, [observer], config)
            runs[name] = (outcome, results, observer)
        return runs[name]

    return get


@pytest.mark.parametrize("name", ["yaw_loop_180", "dolly_loop"])
def test_live_scores_flip_departure_and_return_when_they_happen(
    live_run: LiveRun, name: str
) -> None:
    """Procedural world, true poses, provisional scores after every frame: the provisional
    'departure reached' and 'returned' flip at the first frames where the gate kernel on the
    prefix of the true track says so, stay true, and the final gate is the kernel's."""
    outcome, results, observer = live_run(name)
    # the same world's poses on a tiny image: the poses do not depend on the image size
    source = _source(name, send_poses=True, size=(64, 40))
    world = source.model
    truth = np.array([world.step(k).pose for k in source.schedule.frame_keys()])
    expected = []
    for what in ("departed", "returned"):
        prefix = (
            t for t in range(1, len(truth)) if getattr(return_gate(truth[: t + 1], fps=24.0), what)
        )
        expected.append(next(prefix, None))
    assert expected[0] is not None and expected[1] is not None
    assert _first(observer.states, 0) == expected[0]
    assert _first(observer.states, 1) == expected[1]
    flips = [observer.states[f] for f in sorted(observer.states)]
    for before, after in itertools.pairwise(flips):  # they latch
        assert after[0] >= before[0] and after[1] >= before[1]
    gate = outcome.scores.metrics["memory_return_gate"]
    assert gate.status == "official" and gate.raw == 1.0 and "provisional" not in gate.details
    assert rescore_dir(results).changed == []

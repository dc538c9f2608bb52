"""A Python API usable from a notebook — ``evaluate`` inside a running event loop (as Jupyter has),
``aevaluate`` awaited, both returning the scores."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

import streameval
from streameval.engine.config import PipelineConfig
from streameval.errors import BadInputError

CONFIG = PipelineConfig(cuts="scenedetect-content")


class Slider:
    """A texture sliding left/right with A/D; ``reset`` puts it back (called per episode)."""

    fps = 16.0

    def __init__(self) -> None:
        self.canvas = np.random.default_rng(3).integers(0, 256, (48, 320, 3), dtype=np.uint8)
        self.resets = 0
        self.x = 120

    def reset(self) -> None:
        self.resets += 1
        self.x = 120

    def step(self, key: str) -> np.ndarray:
        self.x += {"A": -2, "D": 2}.get(key, 0)
        return np.ascontiguousarray(self.canvas[:, self.x : self.x + 64])


def test_evaluate_inside_a_running_loop_returns_scores(tmp_path: Path) -> None:
    model = Slider()

    async def notebook_cell() -> streameval.Evaluation:
        # asyncio.run() would raise here ("cannot be called from a running event loop")
        return streameval.evaluate(
            model,
            out=tmp_path,
            model_name="slider",
            actions=[8],
            seconds_per_key=2,
            config=CONFIG,
            record="off",
            reports=False,
        )

    result = asyncio.run(notebook_cell())
    assert result.complete and model.resets == 1
    metrics = result.scores["008_AD"]
    assert metrics["direction_accuracy_trans"].status == "official"
    assert metrics["direction_accuracy_trans"].normalized is not None
    # a uniform flat slide is as much a turn as a strafe to a depth-free fit (no parallax), so
    # the type gate may weigh it down; the ungated direction of its scored segments must be right
    assert metrics["direction_accuracy_trans"].normalized > 50
    segments = metrics["direction_accuracy_trans"].details["segments"]
    directions = [s["dir"] for s in segments if "dir" in s]
    assert directions and all(d > 0.95 for d in directions), segments
    on_disk = json.loads((tmp_path / "slider" / "008_AD" / "scores.json").read_text())
    assert on_disk["metrics"]["direction_accuracy_trans"]["normalized"] == pytest.approx(
        metrics["direction_accuracy_trans"].normalized
    )
    assert [r.model for r in result.table().rows] == ["slider"]

    # a second call keeps what is there unless asked
    again = streameval.evaluate(
        model,
        out=tmp_path,
        model_name="slider",
        actions=[8],
        seconds_per_key=2,
        config=CONFIG,
        record="off",
        reports=False,
    )
    assert again.outcomes == [] and "already holds results" in again.bad_input[0]


def test_aevaluate_awaited_and_bad_model(tmp_path: Path) -> None:
    async def main() -> streameval.Evaluation:
        return await streameval.aevaluate(
            Slider(),
            out=tmp_path,
            actions=[8],
            seconds_per_key=2,
            config=CONFIG,
            record="off",
            reports=False,
        )

    result = asyncio.run(main())
    assert result.complete and list(result.scores) == ["008_AD"]
    assert (tmp_path / "Slider" / "008_AD" / "scores.json").is_file()
    with pytest.raises(BadInputError, match="no step"):
        streameval.evaluate(object(), out=tmp_path)


def test_evaluate_shows_its_real_signature() -> None:
    """help(streameval.evaluate) and an IDE see every option, not ``**options``."""
    import inspect

    params = inspect.signature(streameval.evaluate).parameters
    for name in ("rollouts", "out", "suite", "actions", "trajectories", "loop_seconds", "attach"):
        assert name in params, name
    assert list(inspect.signature(streameval.aevaluate).parameters) == list(params)


def test_evaluate_runs_the_memory_loop_suite(tmp_path: Path) -> None:
    """The Python API runs the memory_loop suite as the command line does (one short loop)."""
    from streameval.worlds.procedural_world import ProceduralWorld

    result = streameval.evaluate(
        ProceduralWorld(),
        out=tmp_path,
        suite="memory_loop",
        trajectories=["dolly_loop"],
        loop_seconds=4.0,
        config=CONFIG,
        record="off",
        reports=False,
    )
    assert result.complete, result.bad_input
    [outcome] = result.outcomes
    assert outcome.info.episode == "dolly_loop"
    assert "memory_return_gate" in outcome.scores.metrics
    assert (tmp_path / "ProceduralWorld" / "dolly_loop" / "scores.json").is_file()


def test_evaluate_attaches_to_a_network_url(tmp_path: Path) -> None:
    """A network URL string goes to the same network jobs as ``streameval attach URL``."""
    from streameval.transports.urls import AttachOptions
    from tests.transports.mjpeg_server import start_mjpeg_server

    async def run() -> streameval.Evaluation:
        runner, port = await start_mjpeg_server()
        try:
            options = AttachOptions(
                clock=None, seconds_per_key=1.0, keys_url=f"http://127.0.0.1:{port}/keys"
            )
            return await streameval.aevaluate(
                f"mjpeg+http://127.0.0.1:{port}/video_feed",
                out=tmp_path,
                model_name="mjpeg-world",
                actions=[1],
                attach=options,
                config=CONFIG,
                record="off",
                reports=False,
            )
        finally:
            await runner.cleanup()

    result = asyncio.run(run())
    assert result.complete, result.bad_input
    [outcome] = result.outcomes
    assert outcome.interactivity["transport"] == "mjpeg"
    assert (tmp_path / "mjpeg-world" / outcome.info.episode / "scores.json").is_file()

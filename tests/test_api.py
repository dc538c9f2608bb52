"""Issue 13: a Python API usable from a notebook — ``evaluate`` inside a running event loop
(as Jupyter has), ``aevaluate`` awaited, both returning the scores."""

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
    assert metrics["direction_accuracy_trans"].normalized > 90
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

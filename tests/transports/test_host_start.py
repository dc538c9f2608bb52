"""Our protocol's ``reset`` with a case start, on the server side (``host.ModelHost``): the
model's ``reset`` receives the image, caption and intrinsics by the names it takes; a start
it cannot take is refused in one line (``refuse``) and nothing is rendered until the next
``reset``, so no frame of the former episode passes for the case's."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
from streameval.protocol.case_start import CaseStart
from streameval.protocol.wire import Frame, Reset, Step

from streameval.transports.host import ModelHost, start_names
from tests.cases.arena_synth import scene, write_image


class _Takes:
    def __init__(self) -> None:
        self.given: dict[str, Any] = {}

    def reset(self, image: Any = None, prompt: str | None = None) -> None:
        self.given = {"image": image, "prompt": prompt}

    def step(self, key: str) -> Any:
        return np.zeros((8, 8, 3), np.uint8)


class _NoImage(_Takes):
    def reset(self) -> None:  # type: ignore[override]
        self.given = {}


def _run(model: Any, start: CaseStart) -> tuple[list[Frame], list[tuple[str, str]]]:
    frames: list[Frame] = []
    refused: list[tuple[str, str]] = []

    async def publish(frame: Frame) -> None:
        frames.append(frame)

    async def refuse(episode: str, words: str) -> None:
        refused.append((episode, words))

    async def main() -> None:
        host = ModelHost(model, 16.0, publish, refuse=refuse)
        host.start()
        try:
            await host.handle(Reset("000_001", start))
            await host.handle(Step(0, "W"))
            await asyncio.sleep(0.2)
        finally:
            await host.stop()

    asyncio.run(main())
    return frames, refused


def test_a_reset_starts_the_model_from_the_case_image(tmp_path: Path) -> None:
    rgb = scene(1, 32, 24)
    data = write_image(tmp_path / "a.png", rgb).read_bytes()
    model = _Takes()
    assert start_names(model) == ("image", "prompt")
    frames, refused = _run(model, CaseStart(data, "image/png", "A street.", None, "s/000_001"))
    assert refused == [] and len(frames) == 1
    assert np.array_equal(model.given["image"], rgb) and model.given["prompt"] == "A street."


def test_a_start_the_model_cannot_take_is_refused_and_nothing_rendered(tmp_path: Path) -> None:
    data = write_image(tmp_path / "a.png", scene(1, 32, 24)).read_bytes()
    assert start_names(_NoImage()) == ()
    frames, refused = _run(_NoImage(), CaseStart(data, "image/png", None, None, "s/000_001"))
    assert frames == []
    assert refused and refused[0][0] == "000_001" and "takes no image" in refused[0][1]
    frames, refused = _run(_Takes(), CaseStart(b"not an image", "image/png"))
    assert frames == [] and "the case image" in refused[0][1]

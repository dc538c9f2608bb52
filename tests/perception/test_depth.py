"""Depth-Anything backend on a tiny random model through the real loading path, the
disparity -> depth conversion, the reference input geometry, and the missing-weights errors."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from streameval.worlds.procedural_world import ProceduralWorld

from streameval.errors import BackendUnavailableError, UnknownBackendError
from streameval.perception.depth import (
    DEPTH_BACKENDS,
    DepthAnything,
    create_depth_backend,
    depth_anything_input_size,
    disparity_to_depth,
)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_input_size_follows_the_dpt_processor() -> None:
    # keep_aspect_ratio: scale the side needing the smaller change to 518, multiples of 14
    assert depth_anything_input_size(432, 640) == (350, 518)
    assert depth_anything_input_size(518, 518) == (518, 518)
    assert depth_anything_input_size(1080, 1920) == (518, 924)
    assert depth_anything_input_size(270, 480) == (294, 518)  # 480 -> 518 is the smaller change


def test_disparity_to_depth() -> None:
    d = np.array([[4.0, 2.0, 1.0], [0.0, -1.0, np.nan]])
    z = disparity_to_depth(d)
    assert z.dtype == np.float32
    assert np.array_equal(z[0], [1.0, 2.0, 4.0])  # d_max / d: the nearest pixel at 1
    assert np.isposinf(z[1]).all()  # no disparity = infinitely far (like the sky)
    # 1/Z is the disparity up to scale: a scaled network output gives the same depth
    assert np.array_equal(disparity_to_depth(d * 7.5), z)
    assert np.isposinf(disparity_to_depth(np.zeros((2, 2)))).all()


@pytest.mark.usefixtures("offline", "one_torch_thread")
def test_depth_anything_end_to_end(tiny_depth_anything: Path) -> None:
    backend = create_depth_backend("depth-anything", model=tiny_depth_anything)
    assert isinstance(backend, DepthAnything) and not backend.metric
    frame = ProceduralWorld().step("W").image
    z = backend.depth(frame)
    assert z.shape == (350, 518) and z.dtype == np.float32
    finite = np.isfinite(z)
    assert finite.any() and (z[finite] >= 1.0).all()  # d_max / d ≥ 1
    assert np.isposinf(z[~finite]).all()
    assert np.array_equal(z, backend.depth(frame))  # deterministic
    raw = backend.predict(frame)
    near = raw > 0
    assert np.allclose(1.0 / z[near], raw[near] / raw.max(), rtol=1e-5)


@pytest.mark.usefixtures("offline")
def test_depth_anything_missing_weights(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(BackendUnavailableError, match=r"no weights in .*model\.safetensors"):
        DepthAnything(tmp_path)
    t0 = time.perf_counter()
    with pytest.raises(BackendUnavailableError, match="not in the Hugging Face cache") as info:
        DepthAnything("streameval-tests/no-such-depth-model")
    assert time.perf_counter() - t0 < 5.0
    assert "hf download streameval-tests/no-such-depth-model" in str(info.value)


def test_registry() -> None:
    assert DEPTH_BACKENDS.names() == ["depth-anything"]
    with pytest.raises(UnknownBackendError, match="did you mean 'depth-anything'"):
        create_depth_backend("depth-anythin")

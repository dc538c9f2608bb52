"""The int8 TransNetV2 model's making (``transnet_int8.py``): seeded calibration windows, made
once per cache folder, a failure recorded and not retried, and no int8 model without nncf.
Its decisions beside eager torch's are in test_transnet_runtime.py (``openvino-int8``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streameval.perception import transnet_int8
from streameval.perception.transnet_int8 import (
    calibration_windows,
    ensure_int8_model,
    int8_model_file,
)

pytestmark = pytest.mark.cpu_features  # run again under STREAMEVAL_CPU_FEATURES=baseline


def test_calibration_windows_are_seeded_and_cross_the_threshold() -> None:
    """The same windows every time (so every machine quantizes alike), TransNetV2's shape,
    with hard cuts (a frame unlike the one before) and fades through black (dark frames)."""
    a, b = calibration_windows(4), calibration_windows(4)
    assert len(a) == 4
    for x, y in zip(a, b, strict=True):
        assert x.shape == (1, 100, 27, 48, 3) and x.dtype == np.uint8
        assert np.array_equal(x, y)
    frames = a[0][0].astype(np.float64)
    jumps = np.abs(np.diff(frames, axis=0)).mean(axis=(1, 2, 3))
    assert jumps.max() > 8 * np.median(jumps)  # a cut among slow motion
    assert (a[3][0].max(axis=(1, 2, 3)) == 0).any()  # the fade's black frames


class _FakeOpenVINO:
    """What ``ensure_int8_model`` asks of OpenVINO: read a model, save one (as two files)."""

    def __init__(self) -> None:
        self.saved: list[str] = []

    def Core(self) -> Any:  # OpenVINO's name
        return self

    def read_model(self, path: str) -> str:
        return path

    def save_model(self, model: Any, path: str, compress_to_fp16: bool) -> None:
        Path(path).write_text(f"<net of {model}/>")
        Path(path).with_suffix(".bin").write_bytes(b"\0" * 8)
        self.saved.append(path)


def test_the_int8_model_is_made_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transnet_int8, "nncf_available", lambda: True)
    monkeypatch.setattr(transnet_int8, "quantize", lambda model: f"int8({Path(model).name})")
    ov = _FakeOpenVINO()
    assert ensure_int8_model(tmp_path, "transnetv2.xml", lambda: ov) == ""
    target = tmp_path / int8_model_file()
    assert target.read_text() == "<net of int8(transnetv2.xml)/>"
    assert target.with_suffix(".bin").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [target.name, target.with_suffix(".bin").name]
    )  # no temporary file or folder left
    assert ensure_int8_model(tmp_path, "transnetv2.xml", lambda: ov) == ""
    assert len(ov.saved) == 1


def test_a_failure_is_recorded_and_not_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def broken(model: Any) -> Any:
        calls.append(model)
        raise RuntimeError("unsupported\noperation")

    monkeypatch.setattr(transnet_int8, "nncf_available", lambda: True)
    monkeypatch.setattr(transnet_int8, "quantize", broken)
    why = ensure_int8_model(tmp_path, "transnetv2.xml", _FakeOpenVINO)
    assert why == "no int8 model: RuntimeError: unsupported operation"
    again = ensure_int8_model(tmp_path, "transnetv2.xml", _FakeOpenVINO)
    assert again.startswith("no int8 model: RuntimeError: unsupported operation (delete ")
    assert len(calls) == 1
    assert not (tmp_path / int8_model_file()).exists()
    assert [p.name for p in tmp_path.iterdir()] == ["int8-failed.txt"]


def test_without_nncf_there_is_no_int8_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transnet_int8, "nncf_available", lambda: False)
    why = ensure_int8_model(tmp_path, "transnetv2.xml", _FakeOpenVINO)
    assert why == "no int8 model: the nncf package is not installed"
    assert list(tmp_path.iterdir()) == []

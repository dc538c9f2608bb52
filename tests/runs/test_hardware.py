"""What the hardware did: NVML's figures through a fake ``pynvml`` (no GPU here),
the no-GPU path, a served model's own statistics, and a claim judged on the GPUs NVML saw."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from streameval.core.events import ChunkDone
from streameval.inputs.claims import parse_claim
from streameval.runs.evidence import RunEvidence
from streameval.runs.hardware import NO_GPU, SERVER_SCOPE, GpuMonitor, ServerFigures, summary_lines


class NVMLError(Exception):
    pass


def fake_nvml(
    names: tuple[str, ...] = ("NVIDIA H100 80GB HBM3",),
    *,
    fail_init: bool = False,
    no_power: bool = False,
) -> ModuleType:
    """A ``pynvml`` stand-in with pynvml's function names: memory climbs 1 GiB a sample up
    to 8 GiB, utilisation alternates 40/60 %, power 300 W then 350 W (in milliwatts)."""
    nvml = ModuleType("pynvml")
    calls = {"memory": 0, "utilisation": 0, "power": 0, "shutdown": 0}

    def init() -> None:
        if fail_init:
            raise NVMLError("Driver Not Loaded")

    def memory(handle: int) -> Any:
        used = min(calls["memory"], 8) * 2**30
        calls["memory"] += 1
        return SimpleNamespace(used=used, total=80 * 2**30)

    def utilisation(handle: int) -> Any:
        calls["utilisation"] += 1
        return SimpleNamespace(gpu=40 if calls["utilisation"] % 2 else 60, memory=10)

    def power(handle: int) -> int:
        if no_power:
            raise NVMLError("Not Supported")
        calls["power"] += 1
        return 300_000 if calls["power"] == 1 else 350_000

    nvml.NVMLError = NVMLError  # type: ignore[attr-defined]
    nvml.nvmlInit = init  # type: ignore[attr-defined]
    nvml.nvmlShutdown = lambda: calls.__setitem__("shutdown", calls["shutdown"] + 1)  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetCount = lambda: len(names)  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetName = lambda h: names[h].encode()  # type: ignore[attr-defined]  # bytes, as older pynvml
    nvml.nvmlDeviceGetMemoryInfo = memory  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetUtilizationRates = utilisation  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetPowerUsage = power  # type: ignore[attr-defined]
    nvml.calls = calls  # type: ignore[attr-defined]
    return nvml


def _run(monitor: GpuMonitor, seconds: float = 0.1) -> dict[str, Any]:
    monitor.start()
    time.sleep(seconds)
    return monitor.stop()


def test_nvml_figures_peak_memory_utilisation_and_power() -> None:
    nvml = fake_nvml()
    gpu = _run(GpuMonitor(interval_s=0.005, nvml=nvml))
    assert gpu["measured"] is True and "NVML" in gpu["scope"]
    (device,) = gpu["devices"]
    assert device["name"] == "NVIDIA H100 80GB HBM3" and device["index"] == 0
    assert device["memory_total_bytes"] == 80 * 2**30 and device["memory_baseline_bytes"] == 0
    assert device["samples"] >= 3
    assert device["memory_peak_bytes"] == min(device["samples"], 8) * 2**30
    assert device["utilisation_max_pct"] == 60 and 40 <= device["utilisation_mean_pct"] <= 60
    assert device["power_max_w"] == 350.0 and 300.0 < device["power_mean_w"] < 350.0
    assert nvml.calls["shutdown"] == 1  # type: ignore[attr-defined]
    (line,) = summary_lines({"gpu": gpu, "server": {"reported": False}})
    assert line.startswith("GPU 0 NVIDIA H100 80GB HBM3: peak memory ") and line.endswith("(NVML)")


def test_a_counter_a_device_lacks_is_left_out() -> None:
    gpu = _run(GpuMonitor(interval_s=0.005, nvml=fake_nvml(("A", "B"), no_power=True)))
    assert [d["name"] for d in gpu["devices"]] == ["A", "B"]
    assert all(d["power_mean_w"] is None and d["memory_peak_bytes"] for d in gpu["devices"])


def test_no_gpu_without_pynvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml → ImportError
    gpu = _run(GpuMonitor(), 0.0)
    assert gpu == {
        "measured": False,
        "reason": f"{NO_GPU} (pynvml is not installed: pip install streameval[gpu])",
    }
    assert summary_lines({"gpu": gpu}) == [f"GPU: {gpu['reason']}"]


@pytest.mark.parametrize(
    ("nvml", "reason"),
    [
        (fake_nvml(fail_init=True), f"{NO_GPU} (NVML: NVMLError: Driver Not Loaded)"),
        (fake_nvml(()), f"{NO_GPU} (NVML found no device)"),
    ],
)
def test_no_gpu_without_a_driver_or_a_device(nvml: ModuleType, reason: str) -> None:
    assert _run(GpuMonitor(nvml=nvml), 0.0) == {"measured": False, "reason": reason}


def test_a_servers_own_statistics_are_labelled_its_own() -> None:
    figures = ServerFigures()
    assert figures.summary() == {"reported": False, "reason": "the server sent no statistics"}
    for i, ms in enumerate([900.0, 1000.0, 1100.0, 2000.0]):
        figures.on_chunk(ChunkDone(i, 16 * i, 16, float(i), "server", {"generation_ms": ms}))
    figures.on_chunk(ChunkDone(9, 0, 16, 9.0, "bursts", {"generation_ms": 5.0}))  # not the server's
    summary = figures.summary()
    assert summary["scope"] == SERVER_SCOPE and summary["chunks"] == 4
    stats = summary["statistics"]["generation_ms"]
    assert (stats["median"], stats["max"], stats["count"]) == (1050.0, 2000.0, 4)
    assert 1100.0 < stats["p95"] < 2000.0
    lines = summary_lines({"gpu": {"measured": False, "reason": NO_GPU}, "server": summary})
    assert lines[1] == "server's own figures (4 chunks): generation_ms median 1050 p95 1865"


def test_a_claim_is_judged_on_the_gpus_nvml_saw(tmp_path: Path) -> None:
    evidence = RunEvidence(tmp_path, parse_claim("16 fps, 1x H100"), nvml=fake_nvml()).start()
    lines = evidence.finish([])
    fields = {f["field"]: f for f in evidence.sections["claim"]["fields"]}
    assert fields["gpu"]["verdict"] == "consistent"
    assert fields["gpu"]["measured"] == "1× NVIDIA H100 80GB HBM3"
    assert evidence.sections["claim"]["verdict"] == "config not stated"  # no resolution
    assert lines[0].startswith("GPU 0 NVIDIA H100 80GB HBM3")
    two = RunEvidence(
        tmp_path, parse_claim("16 fps, 1x H100, 720p"), nvml=fake_nvml(("H100", "H100"))
    )
    two.start().finish([])
    assert two.sections["claim"]["verdict"] == "different configuration"  # two GPUs, one claimed

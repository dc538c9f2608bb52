"""What the hardware did while a run ran: the local GPUs through NVML (peak memory,
utilisation, power), and a served model's own figures from its statistics messages.

Two sources, never blended: NVML measures this machine's devices as a whole (a model in
process and streameval's own backends together), while a server's ``chunk_done``-style
statistics (``ChunkDone.stats``, read as its profile's ``[stats]`` table says) are what the
server says of itself — labelled so in the ledger and the summary. Without NVML (no
``pynvml``, no driver, no device) the GPU block says ``not measured: no GPU`` and why.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from types import ModuleType
from typing import Any

import numpy as np

from streameval.core.events import ChunkDone
from streameval.core.observers import EpisodeObserver

NO_GPU = "not measured: no GPU"
NVML_SCOPE = (
    "whole device while the run ran (a model in process and streameval's own backends alike), "
    "measured by NVML"
)
SERVER_SCOPE = "the server's own figures (its statistics messages), not measured by streameval"
DEFAULT_INTERVAL_S = 0.25


def _nvml_module() -> ModuleType | None:
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        return None


class _Device:
    """The samples of one device."""

    def __init__(self, index: int, handle: Any, name: str, total: int, baseline: int) -> None:
        self.index, self.handle, self.name = index, handle, name
        self.total, self.baseline = total, baseline
        self.memory: list[int] = []
        self.utilisation: list[float] = []
        self.power_w: list[float] = []

    def summary(self) -> dict[str, Any]:
        def stats(values: list[float] | list[int], key: str, unit: str) -> dict[str, Any]:
            if not values:
                return {f"{key}_mean_{unit}": None, f"{key}_max_{unit}": None}
            return {
                f"{key}_mean_{unit}": round(float(np.mean(values)), 3),
                f"{key}_max_{unit}": round(float(np.max(values)), 3),
            }

        return {
            "index": self.index,
            "name": self.name,
            "memory_total_bytes": self.total,
            "memory_baseline_bytes": self.baseline,
            "memory_peak_bytes": max(self.memory) if self.memory else None,
            **stats(self.utilisation, "utilisation", "pct"),
            **stats(self.power_w, "power", "w"),
            "samples": len(self.memory),
        }


class GpuMonitor:
    """Samples every visible NVIDIA device every ``interval_s`` on its own thread, from
    ``start`` to ``stop``; ``stop`` returns the ledger's ``gpu`` block. ``nvml`` replaces the
    ``pynvml`` module (the tests hand in a fake one: no GPU here)."""

    def __init__(
        self, interval_s: float = DEFAULT_INTERVAL_S, nvml: ModuleType | None = None
    ) -> None:
        self.interval_s = interval_s
        self._nvml = nvml
        self._devices: list[_Device] = []
        self._reason: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> GpuMonitor:
        nvml = self._nvml if self._nvml is not None else _nvml_module()
        if nvml is None:
            self._reason = f"{NO_GPU} (pynvml is not installed: pip install streameval[gpu])"
            return self
        self._nvml = nvml
        try:
            nvml.nvmlInit()
            count = int(nvml.nvmlDeviceGetCount())
            for index in range(count):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                name = nvml.nvmlDeviceGetName(handle)
                memory = nvml.nvmlDeviceGetMemoryInfo(handle)
                self._devices.append(
                    _Device(
                        index,
                        handle,
                        name.decode() if isinstance(name, bytes) else str(name),
                        int(memory.total),
                        int(memory.used),
                    )
                )
        except Exception as exc:  # NVMLError: no driver, no device, no permission
            self._reason = f"{NO_GPU} (NVML: {type(exc).__name__}: {exc})"
            self._devices = []
            return self
        if not self._devices:
            self._reason = f"{NO_GPU} (NVML found no device)"
            return self
        self._sample()
        self._thread = threading.Thread(target=self._run, name="gpu-monitor", daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        nvml = self._nvml
        assert nvml is not None  # started
        for device in self._devices:
            for read in (self._memory, self._utilisation, self._power):
                try:
                    read(nvml, device)
                except Exception:  # a counter a device does not expose: that one is left out
                    continue

    @staticmethod
    def _memory(nvml: Any, device: _Device) -> None:
        device.memory.append(int(nvml.nvmlDeviceGetMemoryInfo(device.handle).used))

    @staticmethod
    def _utilisation(nvml: Any, device: _Device) -> None:
        device.utilisation.append(float(nvml.nvmlDeviceGetUtilizationRates(device.handle).gpu))

    @staticmethod
    def _power(nvml: Any, device: _Device) -> None:
        device.power_w.append(float(nvml.nvmlDeviceGetPowerUsage(device.handle)) / 1000.0)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def stop(self) -> dict[str, Any]:
        """Stop sampling; the ``gpu`` block: ``measured``, ``scope``, one entry per device, or
        ``reason`` (``not measured: no GPU ...``)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._sample()  # the end of the run counts too
        if self._reason is not None:
            return {"measured": False, "reason": self._reason}
        if self._nvml is not None:
            # the figures are taken: a failed shutdown loses none of them
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()
        return {
            "measured": True,
            "scope": NVML_SCOPE,
            "devices": [d.summary() for d in self._devices],
        }


def _percentile(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values, dtype=np.float64), q)), 3)


class ServerFigures(EpisodeObserver):
    """A served model's own statistics (generation time, control latency, queue depth, frames
    it dropped: whatever its profile's ``[stats]`` maps), gathered over every episode's
    chunks."""

    def __init__(self) -> None:
        self.values: dict[str, list[float]] = {}
        self.chunks = 0

    def on_chunk(self, event: ChunkDone) -> None:
        if event.origin != "server" or not event.stats:
            return
        self.chunks += 1
        for name, value in event.stats.items():
            if isinstance(value, int | float) and np.isfinite(value):
                self.values.setdefault(name, []).append(float(value))

    def summary(self) -> dict[str, Any]:
        """The ledger's ``server`` block: per statistic median, p95, max and count; or
        ``reported: false`` when no server statistics arrived."""
        if not self.values:
            return {"reported": False, "reason": "the server sent no statistics"}
        return {
            "reported": True,
            "scope": SERVER_SCOPE,
            "chunks": self.chunks,
            "statistics": {
                name: {
                    "median": _percentile(values, 50),
                    "p95": _percentile(values, 95),
                    "max": round(max(values), 3),
                    "count": len(values),
                }
                for name, values in sorted(self.values.items())
            },
        }


def summary_lines(hardware: dict[str, Any]) -> list[str]:
    """One line for the GPUs and one for the server's figures, for the run's closing lines."""
    gpu = hardware.get("gpu") or {}
    lines: list[str] = []
    if gpu.get("measured"):
        for d in gpu.get("devices", []):
            peak = d.get("memory_peak_bytes")
            peak_text = "n/a" if peak is None else f"{peak / 2**30:.2f} GiB"
            lines.append(
                f"GPU {d['index']} {d['name']}: peak memory {peak_text}, utilisation mean "
                f"{_fmt(d.get('utilisation_mean_pct'))} %, power mean "
                f"{_fmt(d.get('power_mean_w'))} W max {_fmt(d.get('power_max_w'))} W (NVML)"
            )
    else:
        lines.append(f"GPU: {gpu.get('reason', NO_GPU)}")
    server = hardware.get("server") or {}
    if server.get("reported"):
        parts = [
            f"{name} median {s['median']:g} p95 {s['p95']:g}"
            for name, s in server["statistics"].items()
        ]
        lines.append(f"server's own figures ({server['chunks']} chunks): " + "; ".join(parts))
    return lines


def _fmt(value: object) -> str:
    return "n/a" if not isinstance(value, int | float) else f"{value:.1f}"

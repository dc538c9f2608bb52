"""TransNetV2 in int8: the fast pass of a CPU without native bfloat16.

On a CPU without AVX512-BF16 or AMX (an AMD EPYC, most cloud x86 servers, or any machine under
``STREAMEVAL_CPU_FEATURES=baseline``) TransNetV2's float32 network was most of the default
stack's cost: the full stack kept 0.44 of the memory-off throughput on an EPYC. OpenVINO runs
an int8 model ~2× faster than float32 with AVX2 alone (~4× with AVX512-VNNI), so there the
int8 model is the fast pass of ``transnet_guard.py``: every window in int8 first, and again in
float32 when a probability it decides lies within the band around the threshold. Decisions are
float32's unless int8 errs by more than its band (2.0 logit, twice bfloat16's); on the check
clip, a hard-cut episode and a fade through black it erred by at most 0.33 logit where
0.01 < p < 0.99, and each machine checks its int8 model on the check clip before using it (as
it checks bfloat16), refusing it beyond a quarter of the band.

The int8 model is made once per machine, the first time a worker needs it (a CPU without native
bfloat16: ~25 s), into the float32 export's cache folder, by NNCF's post-training
quantization of the 3D convolutions (min-max statistics of the activations, fast bias
correction, 7-bit weights) on
:func:`calibration_windows`: seeded synthetic shots (smooth textures that pan, zoom and change
brightness, hard cuts, fades through black) shrunk to TransNetV2's 48×27 frames, like the
evaluator's own frames after ``shrink_for_transnet``; its file is named for the nncf version
that made it. Without the ``nncf`` package (or when quantization fails, recorded once so that
no worker tries again) there is no int8 model, and such a CPU runs float32 throughout, saying
so.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.core.atomic import replace_atomically, write_text_atomic

_FAILED_FILE = "int8-failed.txt"  # why this machine could not make the int8 model
CALIBRATION_WINDOWS = 12  # 100 frames each: NNCF's statistics over 1,200 frames (~15 s once)
_FRAME = (27, 48)  # TransNetV2's frame, height × width
# Left in float: everything but the 3D convolutions (the similarity branch's norms and
# divisions, the dense layers, pools and the residual sums): quantized, they erred by ~1 logit
# on a fade through black; the convolutions are where the time goes.
FLOAT_OPS = ("MatMul", "Divide", "ReduceL2", "ReduceMean", "AvgPool", "Add")


def nncf_available() -> bool:
    """Whether the int8 model can be made here (the ``nncf`` package, found without import)."""
    return importlib.util.find_spec("nncf") is not None


def int8_model_file() -> str:
    """The int8 model's file name (beside it, the same name in ``.bin``): named for the nncf
    version that quantizes it, so that another version makes its own."""
    try:
        version = metadata.version("nncf")
    except metadata.PackageNotFoundError:
        version = "none"
    return f"transnetv2-int8-nncf{version}.xml"


def ensure_int8_model(folder: Path, float_model: str, import_openvino: Callable[[], Any]) -> str:
    """'' when ``folder`` holds the int8 model, made now from its float32 ``float_model`` if
    missing (atomically: the ``.bin``, then the ``.xml`` whose presence means both are whole);
    else why there is none (no ``nncf``, or a failure, recorded in ``folder`` the first time
    and not retried: delete the file to retry)."""
    target = folder / int8_model_file()
    if target.is_file():
        return ""
    if not nncf_available():
        return "no int8 model: the nncf package is not installed"
    failed = folder / _FAILED_FILE
    if failed.is_file():
        return f"no int8 model: {failed.read_text().strip()} (delete {failed} to retry)"
    ov = import_openvino()
    work = Path(tempfile.mkdtemp(prefix=".int8-", dir=folder))
    try:
        quantized = quantize(ov.Core().read_model(str(folder / float_model)))
        ov.save_model(quantized, str(work / target.name), compress_to_fp16=False)
        for name in (target.with_suffix(".bin").name, target.name):
            tmp = folder / f"{name}.{os.getpid()}.tmp"  # several workers may make it at once
            replace_atomically(folder / name, functools.partial(shutil.move, work / name), tmp)
    except Exception as err:
        why = " ".join(f"{type(err).__name__}: {err}".split())
        with contextlib.suppress(OSError):
            write_text_atomic(failed, why + "\n")
        return f"no int8 model: {why}"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return ""


def _shot(rng: np.random.Generator, frames: int) -> list[npt.NDArray[np.uint8]]:
    """One seeded shot: a smooth random texture seen through a moving, zooming window whose
    brightness drifts (a camera that pans and dollies over a scene)."""
    import cv2

    texture = rng.integers(0, 256, (int(rng.integers(6, 24)), int(rng.integers(10, 40)), 3))
    big = np.asarray(
        cv2.resize(texture.astype(np.uint8), (192, 108), interpolation=cv2.INTER_CUBIC)
    ).astype(np.float32)
    x0, y0 = rng.uniform(0, 96), rng.uniform(0, 54)
    vx, vy = rng.uniform(-1.5, 1.5), rng.uniform(-0.8, 0.8)
    zoom, dzoom = rng.uniform(0.5, 1.0), rng.uniform(-0.004, 0.004)
    gain, dgain = rng.uniform(0.6, 1.2), rng.uniform(-0.004, 0.004)
    out = []
    for t in range(frames):
        z = float(np.clip(zoom + dzoom * t, 0.35, 1.0))
        w, h = 96 * z, 54 * z
        x = float(np.clip(x0 + vx * t, 0, 192 - w))
        y = float(np.clip(y0 + vy * t, 0, 108 - h))
        crop = big[int(y) : int(y + h), int(x) : int(x + w)]
        frame = cv2.resize(crop, (_FRAME[1], _FRAME[0]), interpolation=cv2.INTER_AREA)
        out.append(np.clip(frame * (gain + dgain * t), 0, 255).astype(np.uint8))
    return out


def calibration_windows(count: int = CALIBRATION_WINDOWS) -> list[npt.NDArray[np.uint8]]:
    """``count`` seeded (1, 100, 27, 48, 3) uint8 windows of shots joined by hard cuts and,
    one window in four, a fade through black: both sides of TransNetV2's threshold and the
    steep probabilities between them."""
    rng = np.random.default_rng(20261207)
    windows = []
    for i in range(count):
        frames: list[npt.NDArray[np.uint8]] = []
        while len(frames) < 100:
            shot = _shot(rng, int(rng.integers(15, 70)))
            if i % 4 == 3 and frames:
                n = 8
                for k in range(n):  # fade out, black, fade in
                    frames.append((frames[-1] * (1 - (k + 1) / n)).astype(np.uint8))
                frames += [np.zeros_like(shot[0])] * 4
                shot = [(f * min(1.0, (k + 1) / n)).astype(np.uint8) for k, f in enumerate(shot)]
            frames += shot
        windows.append(np.ascontiguousarray(np.stack(frames[:100]))[np.newaxis])
    return windows


def quantize(model: Any) -> Any:
    """The float32 OpenVINO model ``model`` quantized to int8 by NNCF on
    :func:`calibration_windows` (its progress bars and log lines go to stderr, never to a
    worker's protocol stream). Raises ImportError without ``nncf``."""
    sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]
    import nncf
    from nncf.quantization.advanced_parameters import (
        AdvancedQuantizationParameters,
        OverflowFix,
    )

    nncf.set_log_level(logging.ERROR)
    with contextlib.redirect_stdout(sys.stderr):
        return nncf.quantize(
            model,
            nncf.Dataset(calibration_windows()),
            preset=nncf.QuantizationPreset.MIXED,
            subset_size=CALIBRATION_WINDOWS,
            ignored_scope=nncf.IgnoredScope(types=list(FLOAT_OPS)),
            # 7-bit weights: no int16 saturation in AVX2's u8×s8 products, so the model
            # computes the same with or without VNNI (the check clip's error measured 0.33
            # logit both ways, where 8-bit weights gave 0.19 with VNNI and 0.89 on AVX2)
            advanced_parameters=AdvancedQuantizationParameters(overflow_fix=OverflowFix.ENABLE),
        )

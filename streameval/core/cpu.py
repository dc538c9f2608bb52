"""What this CPU can do, as streameval plans with it, and ``STREAMEVAL_CPU_FEATURES=baseline``.

streameval picks runtimes by the CPU's features (TransNetV2's bfloat16 pass where the CPU
computes bfloat16 natively, the number of live sessions one evaluator keeps up with), and the
libraries below it dispatch on them too (NumPy, OpenCV, torch and OpenVINO through oneDNN).
Most machines that users run streameval on are not the developers' CPU: an AMD EPYC has no
AVX-512 and no native bfloat16. So one variable makes a machine act as such a CPU:

- ``STREAMEVAL_CPU_FEATURES=native`` (the default, also when unset): what ``/proc/cpuinfo`` says.
- ``STREAMEVAL_CPU_FEATURES=baseline``: an x86-64 CPU with AVX2 and FMA but without AVX-512,
  AVX-VNNI, AMX and native bfloat16. streameval's own checks see no such flag, and the
  libraries are capped through their documented variables (:data:`LIBRARY_CAPS`), set for this
  process's later imports and inherited by every worker process it starts.

A library already imported when the variables are set keeps its dispatch in this process (NumPy
reads its variable once, at import); :func:`library_caps_applied` tells which were in time.
``make test-baseline`` and ``.ci/run`` set the variable before Python starts, so every library
of every process is capped.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import MutableMapping

from streameval.errors import BadInputError

CPU_FEATURES_ENV = "STREAMEVAL_CPU_FEATURES"
MODES = ("native", "baseline")

# Flags of /proc/cpuinfo a baseline CPU does not have: AVX-512 in all its parts, the VNNI and
# AMX extensions, and native bfloat16 (an AMD EPYC 7003, say: AVX2 and FMA, nothing above).
_ABOVE_BASELINE_PREFIXES = ("avx512", "amx", "avx_vnni", "avx_ifma", "avx_ne_convert")

# The libraries' own variables, for a baseline CPU. oneDNN (inside torch and OpenVINO) and
# torch's ATen kernels dispatch at most AVX2; OpenVINO's own kernels read OV_CPU_MAX_ISA where
# the build honours it (it asks for both oneDNN's and its own together); NumPy 2 dispatches its
# x86-64-v3 (AVX2) kernels instead of x86-64-v4 / Ice Lake / Sapphire Rapids ones (names it
# does not dispatch are ignored); OpenCV's are set from the flags the CPU really has, since it
# warns on each name the CPU lacks.
LIBRARY_CAPS: dict[str, str] = {
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "DNNL_MAX_CPU_ISA": "AVX2",
    "OV_CPU_MAX_ISA": "AVX2",
    "ATEN_CPU_CAPABILITY": "avx2",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR AVX512F AVX512CD AVX512_SKX "
    "AVX512_CLX AVX512_CNL",
}
# OpenCV's dispatch names for a cpuinfo flag the CPU has (OPENCV_CPU_DISABLE).
_OPENCV_NAMES = {
    "avx512f": ("AVX512F", "AVX512-COMMON", "AVX512-SKX"),
    "avx512_vnni": ("AVX512-CLX",),
    "avx512vbmi": ("AVX512-CNL",),
    "avx512_vbmi2": ("AVX512-ICL",),
    "avx_vnni": ("AVX_VNNI",),
}
# The library each variable is for, by the module whose import reads it.
_READ_AT_IMPORT = {
    "NPY_DISABLE_CPU_FEATURES": "numpy",
    "OPENCV_CPU_DISABLE": "cv2",
    "ATEN_CPU_CAPABILITY": "torch",
    "ONEDNN_MAX_CPU_ISA": "torch",
    "OV_CPU_MAX_ISA": "openvino",
}


def mode(environ: MutableMapping[str, str] | None = None) -> str:
    """``native`` or ``baseline``, from ``$STREAMEVAL_CPU_FEATURES`` (empty or unset: native);
    any other value is bad input, named in one line."""
    env = os.environ if environ is None else environ
    value = env.get(CPU_FEATURES_ENV, "").strip().lower() or "native"
    if value not in MODES:
        raise BadInputError(
            f"${CPU_FEATURES_ENV}={env.get(CPU_FEATURES_ENV)!r} is not a CPU feature set; "
            f"known: {', '.join(MODES)}"
        )
    return value


def is_baseline() -> bool:
    """Whether this process acts as a baseline CPU (``STREAMEVAL_CPU_FEATURES=baseline``)."""
    return mode() == "baseline"


@functools.cache
def _cpuinfo_flags() -> frozenset[str]:
    """The first processor's flags in ``/proc/cpuinfo``, read once a process (empty where there
    is none: not Linux, or not x86)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def above_baseline(flag: str) -> bool:
    """Whether ``flag`` (a ``/proc/cpuinfo`` name) is one a baseline CPU lacks."""
    return flag.startswith(_ABOVE_BASELINE_PREFIXES)


def cpu_flags() -> frozenset[str]:
    """The CPU's flags as streameval sees them: all of them natively, those of a baseline CPU
    under ``STREAMEVAL_CPU_FEATURES=baseline``."""
    flags = _cpuinfo_flags()
    if is_baseline():
        return frozenset(f for f in flags if not above_baseline(f))
    return flags


def has_native_bfloat16() -> bool:
    """Whether the CPU computes bfloat16 natively (AVX512-BF16 or AMX-BF16): where OpenVINO can
    run TransNetV2's bfloat16 pass. Never under ``baseline``."""
    return bool(cpu_flags() & {"avx512_bf16", "amx_bf16"})


def library_caps(flags: frozenset[str] | None = None) -> dict[str, str]:
    """The variables that cap the libraries to a baseline CPU, OpenCV's from ``flags`` (default:
    this CPU's real ones)."""
    real = _cpuinfo_flags() if flags is None else flags
    caps = dict(LIBRARY_CAPS)
    opencv = [name for flag, names in _OPENCV_NAMES.items() if flag in real for name in names]
    if opencv:
        caps["OPENCV_CPU_DISABLE"] = ",".join(opencv)
    return caps


def apply_library_caps(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Under ``baseline``, set every library variable not already set (a user's own value
    wins) and return what was set; natively, nothing. Called when streameval is imported, so a
    worker process started later inherits the caps."""
    env = os.environ if environ is None else environ
    try:
        if mode(env) != "baseline":
            return {}
    except BadInputError:
        return {}  # said in one line by the command line (``mode()``), not at import
    applied: dict[str, str] = {}
    for name, value in library_caps().items():
        if name not in env:
            env[name] = value
            applied[name] = value
    return applied


# The libraries that were imported before the caps were set in this process (they keep their
# full dispatch here; the worker processes it starts are capped all the same).
_too_late: set[str] = set()


def libraries_imported_before_caps() -> tuple[str, ...]:
    """The libraries (module names) that this process imported before streameval set their
    caps: ``import numpy`` ahead of ``import streameval`` under ``baseline``, say. Empty when
    ``STREAMEVAL_CPU_FEATURES`` was set before Python started (``make test-baseline``)."""
    return tuple(sorted(_too_late))


def _apply_at_import() -> None:
    """``apply_library_caps()`` when streameval is imported, noting the libraries too late."""
    for name in apply_library_caps():
        module = _READ_AT_IMPORT.get(name)
        if module is not None and module in sys.modules:
            _too_late.add(module)


_apply_at_import()

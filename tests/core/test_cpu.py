"""``STREAMEVAL_CPU_FEATURES`` (``core/cpu.py``): a machine acts as a CPU without AVX-512 and
native bfloat16 — streameval's own checks and the libraries' dispatch alike — whatever CPU runs
the test."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from streameval.core import cpu
from streameval.errors import BadInputError
from streameval.runs.servers import (
    SESSION_CPU_PER_VIDEO_S,
    TRANSNETV2_FLOAT32_CPU_PER_VIDEO_S,
    session_cpu_per_video_s,
)

pytestmark = pytest.mark.cpu_features  # run again under STREAMEVAL_CPU_FEATURES=baseline

AMX_XEON = frozenset(
    ["fpu", "sse", "sse2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512_bf16"]
) | frozenset(["avx512_vnni", "avx512vbmi", "avx512_vbmi2", "amx_bf16", "amx_tile", "avx_vnni"])
EPYC_ZEN3 = frozenset(["fpu", "sse", "sse2", "avx", "avx2", "fma", "bmi2", "sha_ni", "vaes"])


@pytest.fixture
def cpuinfo(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The tests say which CPU ``/proc/cpuinfo`` describes."""
    monkeypatch.delenv(cpu.CPU_FEATURES_ENV, raising=False)
    return monkeypatch


def as_cpu(monkeypatch: pytest.MonkeyPatch, flags: frozenset[str]) -> None:
    monkeypatch.setattr(cpu, "_cpuinfo_flags", lambda: flags)


def test_the_mode_is_native_unless_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cpu.CPU_FEATURES_ENV, raising=False)
    assert cpu.mode() == "native"
    for value, expected in (("", "native"), ("Baseline", "baseline"), (" native ", "native")):
        monkeypatch.setenv(cpu.CPU_FEATURES_ENV, value)
        assert cpu.mode() == expected
    monkeypatch.setenv(cpu.CPU_FEATURES_ENV, "avx2")
    with pytest.raises(BadInputError, match=r"STREAMEVAL_CPU_FEATURES='avx2'.*known: native"):
        cpu.mode()


def test_baseline_hides_avx512_amx_and_bfloat16(cpuinfo: pytest.MonkeyPatch) -> None:
    as_cpu(cpuinfo, AMX_XEON)
    assert cpu.has_native_bfloat16()
    assert cpu.cpu_flags() == AMX_XEON
    cpuinfo.setenv(cpu.CPU_FEATURES_ENV, "baseline")
    assert not cpu.has_native_bfloat16()
    assert cpu.cpu_flags() == frozenset(["fpu", "sse", "sse2", "avx", "avx2", "fma"])
    # a CPU that is baseline already is unchanged by it
    as_cpu(cpuinfo, EPYC_ZEN3)
    assert cpu.cpu_flags() == EPYC_ZEN3
    assert not cpu.has_native_bfloat16()


def test_the_library_caps_name_only_what_the_cpu_has() -> None:
    """OpenCV warns on each feature it is told to disable that the CPU lacks: its list comes
    from the real flags (none on a baseline CPU); the others are fixed names."""
    on_xeon = cpu.library_caps(AMX_XEON)
    assert on_xeon["ONEDNN_MAX_CPU_ISA"] == "AVX2"
    assert on_xeon["ATEN_CPU_CAPABILITY"] == "avx2"
    assert "X86_V4" in on_xeon["NPY_DISABLE_CPU_FEATURES"].split()
    assert on_xeon["OPENCV_CPU_DISABLE"].split(",") == [
        "AVX512F", "AVX512-COMMON", "AVX512-SKX", "AVX512-CLX", "AVX512-CNL", "AVX512-ICL",
        "AVX_VNNI",
    ]  # fmt: skip
    assert "OPENCV_CPU_DISABLE" not in cpu.library_caps(EPYC_ZEN3)


def test_caps_are_set_only_under_baseline_and_never_over_a_users_value() -> None:
    env = {"ATEN_CPU_CAPABILITY": "default"}
    assert cpu.apply_library_caps(env) == {}
    assert env == {"ATEN_CPU_CAPABILITY": "default"}
    env[cpu.CPU_FEATURES_ENV] = "baseline"
    applied = cpu.apply_library_caps(env)
    assert env["ATEN_CPU_CAPABILITY"] == "default"  # the user's
    assert "ATEN_CPU_CAPABILITY" not in applied
    assert env["ONEDNN_MAX_CPU_ISA"] == applied["ONEDNN_MAX_CPU_ISA"] == "AVX2"
    assert cpu.apply_library_caps({cpu.CPU_FEATURES_ENV: "nonsense"}) == {}  # said by the CLI


def run_as_baseline(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter started under ``STREAMEVAL_CPU_FEATURES=baseline``,
    with none of the library caps set before it (streameval sets them)."""
    env = {k: v for k, v in os.environ.items() if k not in cpu.library_caps()}
    env[cpu.CPU_FEATURES_ENV] = "baseline"
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


def test_a_process_started_under_baseline_dispatches_no_avx512() -> None:
    """A fresh interpreter that imports streameval first: NumPy's x86-64-v4 kernels and
    torch's AVX-512 ones are off, and nothing was imported too late (true on any CPU: a CPU
    without AVX-512 has them off anyway)."""
    code = (
        "import json, streameval, numpy\n"
        "from numpy._core._multiarray_umath import __cpu_features__ as f\n"
        "from streameval.core import cpu\n"
        "out = {'v4': bool(f.get('X86_V4')), 'late': cpu.libraries_imported_before_caps(),\n"
        "       'bf16': cpu.has_native_bfloat16()}\n"
        "try:\n"
        "    import torch\n"
        "    out['torch'] = torch.backends.cpu.get_cpu_capability()\n"
        "except ImportError:\n"
        "    out['torch'] = 'AVX2'\n"
        "print(json.dumps(out))\n"
    )
    done = run_as_baseline(code)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"v4": False, "late": [], "bf16": False, "torch": out["torch"]}
    assert out["torch"] in ("DEFAULT", "AVX2")


def test_a_library_imported_first_is_named() -> None:
    code = (
        "import numpy, streameval\nfrom streameval.core import cpu\n"
        "print(cpu.libraries_imported_before_caps())"
    )
    done = run_as_baseline(code)
    assert done.stdout.strip() == "('numpy',)", done.stderr


def test_a_baseline_cpu_plans_sessions_at_the_float32_cost(cpuinfo: pytest.MonkeyPatch) -> None:
    as_cpu(cpuinfo, AMX_XEON)
    cpuinfo.delenv("STREAMEVAL_TRANSNET_RUNTIME", raising=False)
    cpuinfo.setenv(cpu.CPU_FEATURES_ENV, "baseline")
    assert session_cpu_per_video_s("transnetv2") == TRANSNETV2_FLOAT32_CPU_PER_VIDEO_S
    cpuinfo.setenv(cpu.CPU_FEATURES_ENV, "native")
    if cpu.has_native_bfloat16() and _has_openvino():
        assert session_cpu_per_video_s("transnetv2") == SESSION_CPU_PER_VIDEO_S["transnetv2"]


def test_the_command_line_refuses_an_unknown_feature_set(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from streameval.cli.main import main

    monkeypatch.setenv(cpu.CPU_FEATURES_ENV, "avx9000")
    assert main(["profiles"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "STREAMEVAL_CPU_FEATURES='avx9000'" in err[0]


def _has_openvino() -> bool:
    import importlib.util

    return importlib.util.find_spec("openvino") is not None

"""``streameval doctor``: what a run will need, checked before it runs, each failure with its fix.

A preflight, not a test: it does what the run would do first (start the model's interpreter,
import the adapter and call its factory, take one step; create each chosen backend, which
resolves its weights; reach the server or the broker; find the codecs and the browser) and
says for each thing that fails the command or the file that fixes it. Findings are ``ok``,
``warn`` (the run goes, slower or with less) or ``FAIL`` (the run would not); the command
exits 1 on any ``FAIL``.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from streameval.engine.backends import BACKEND_KINDS, backend_spec, create_backend
from streameval.engine.config import PipelineConfig
from streameval.errors import BadInputError, StreamevalError, one_line

Level = Literal["ok", "warn", "FAIL"]
DOCS = "docs/evaluate-your-model.md"


@dataclass(frozen=True, slots=True)
class Finding:
    level: Level
    what: str
    detail: str
    fix: str | None = None

    def line(self) -> str:
        fix = f" — fix: {self.fix}" if self.fix and self.level != "ok" else ""
        return f"{self.level:<4}  {self.what}: {self.detail}{fix}"


@dataclass(frozen=True, slots=True)
class DoctorRequest:
    """What the run will be: its URL (a ``python:`` model, a server, a browser page), the
    model's interpreter (``--python``), its backends, where it publishes."""

    url: str | None = None
    python: Path | None = None
    app_dir: Path = Path(".")
    step_timeout: float = 300.0
    config: PipelineConfig = field(default_factory=PipelineConfig)
    publish_mqtt: str | None = None
    gpu: bool = False


def diagnose(request: DoctorRequest) -> list[Finding]:
    """Every finding, in the order a run meets them."""
    found: list[Finding] = []
    if request.python is not None:
        found.append(_interpreter(request.python))
    url = request.url or ""
    if url.startswith("python:") and not (found and found[-1].level == "FAIL"):
        found.extend(_adapter(request))
    elif url.startswith("browser+"):
        found.append(_chromium())
        found.append(_reachable(url.removeprefix("browser+"), "the page's server"))
    elif url.startswith("mqtt"):
        found.append(_reachable(url, "the MQTT broker", broker=True))
    elif url:
        found.append(_reachable(url, "the server"))
    if request.publish_mqtt:
        found.append(_reachable(request.publish_mqtt, "--publish-mqtt's broker", broker=True))
    found.extend(_backends(request.config))
    found.extend(_codecs())
    found.append(_cpu_fast_path(request.config))
    if request.gpu:
        found.append(_gpu(request.python))
    return found


# ------------------------------------------------------------------------ the model


def _interpreter(python: Path) -> Finding:
    what = f"--python {python}"
    if not python.exists():
        return Finding(
            "FAIL",
            what,
            "no such file",
            "point --python at the environment's interpreter, e.g. ENV/bin/python",
        )
    try:
        got = subprocess.run(
            [
                str(python),
                "-c",
                "import sys; print(sys.version_info[:2] >= (3, 8), sys.version.split()[0])",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Finding(
            "FAIL",
            what,
            f"does not run ({one_line(str(exc))})",
            f"check that {python} is an executable Python interpreter",
        )
    words = got.stdout.split()
    if got.returncode != 0 or len(words) != 2:
        return Finding(
            "FAIL",
            what,
            f"does not run: {one_line(got.stderr)[:200]}",
            f"run {python} -c 'print(1)' by hand and repair the environment",
        )
    if words[0] != "True":
        return Finding(
            "FAIL",
            what,
            f"Python {words[1]} (the bridge needs 3.8 or later)",
            "create the model's environment with Python 3.8+",
        )
    return Finding("ok", what, f"Python {words[1]}")


_NO_MODULE = re.compile(r"No module named '([^']+)'")


def _load_fix(message: str, request: DoctorRequest, module: str, factory: str) -> str:
    """The fix for a model that did not load, from its own words."""
    python = str(request.python or sys.executable)
    missing = _NO_MODULE.search(message)
    if missing is not None:
        name = missing.group(1).split(".")[0]
        own = Path(module).stem if module.endswith(".py") else module.split(".")[0]
        if name == own:
            return (
                f"run from the folder that holds {module} or pass --app-dir DIR "
                "(the folder searched first)"
            )
        return f"{python} -m pip install {name}"
    if "has no callable" in message:
        return f"define {factory}() in {module}, returning the model ({DOCS})"
    if "has no step(key)" in message:
        return f"give the model a step(key) method that returns an H×W×3 uint8 frame ({DOCS})"
    call = f"import {module}; {module}.{factory}()"
    return f"call it by hand to see the full error: {python} -c '{call}'"


def _adapter(request: DoctorRequest) -> Iterator[Finding]:
    from streameval.inputs.frames import frame_problem
    from streameval.runs.python_model import load_python_model

    url = str(request.url)
    module, _, factory = url.removeprefix("python:").rpartition(":")
    where = f" in {request.python}" if request.python else ""
    try:
        model, name = load_python_model(url, request.app_dir, request.step_timeout, request.python)
    except BadInputError as exc:
        message = str(exc).removeprefix(f"{url}: ")
        yield Finding("FAIL", url, one_line(message), _load_fix(message, request, module, factory))
        return
    try:
        yield Finding("ok", url, f"{name} loads{where}")
        reset = getattr(model, "reset", None)
        if callable(reset):
            from streameval.transports.inprocess.driver import reset_keywords

            takes = reset_keywords(reset)
            names = "every keyword" if takes is None else (", ".join(sorted(takes)) or "nothing")
            level: Level = "ok" if takes is None or "image" in takes else "warn"
            yield Finding(
                level,
                "reset()",
                f"takes {names}",
                "give reset an image= parameter to run a benchmark's cases from "
                "their images (docs/run-worldmark.md)",
            )
        else:
            yield Finding(
                "warn",
                "reset()",
                "none: every episode continues the last one",
                f"add reset(image=None, prompt=None) ({DOCS})",
            )
        try:
            frame = model.step("W")
        except Exception as exc:
            yield Finding(
                "FAIL",
                "step('W')",
                f"raised {type(exc).__name__}: {one_line(str(exc))}",
                f"call the model's step('W') by hand and fix what it raises ({DOCS})",
            )
            return
        image = getattr(frame, "image", frame)
        problem = frame_problem(image, None)
        if problem is not None:
            yield Finding(
                "FAIL",
                "step('W')",
                f"the frame {problem}",
                f"return an H×W×3 uint8 array (or an object with .image) ({DOCS})",
            )
        else:
            h, w = int(image.shape[0]), int(image.shape[1])
            yield Finding("ok", "step('W')", f"a {w}×{h} frame")
    finally:
        closer = getattr(model, "close", None)
        if callable(closer):
            closer()


# ------------------------------------------------------------------------ reaching things


def _reachable(url: str, what: str, *, broker: bool = False) -> Finding:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    default = 8883 if parts.scheme.endswith("s") and broker else 1883 if broker else 80
    if not broker and parts.scheme.endswith("s"):
        default = 443
    try:
        port = parts.port or default
    except ValueError:
        return Finding("FAIL", what, f"{url} has no valid port", "give HOST:PORT")
    try:
        with socket.create_connection((host, port), timeout=3.0):
            pass
    except OSError as exc:
        if broker:
            fix = (
                f"start a broker: mosquitto -p {port} -d (Debian/Ubuntu: apt-get install mosquitto)"
            )
        else:
            fix = f"start the server first, or check {host}:{port}"
        return Finding("FAIL", what, f"{host}:{port} does not answer ({exc.strerror or exc})", fix)
    return Finding("ok", what, f"{host}:{port} answers")


def _chromium() -> Finding:
    """The Chromium a ``browser+`` URL would start (``$STREAMEVAL_CHROMIUM``, else PATH),
    found the way the transport finds it."""
    from streameval.transports.browser.cdp import INSTALL_FIX, find_chromium

    try:
        return Finding("ok", "Chromium", find_chromium())
    except BadInputError as exc:
        problem = str(exc).removeprefix(f"{exc.source}: ").removesuffix(f": {INSTALL_FIX}")
        return Finding("FAIL", "Chromium", problem, INSTALL_FIX)


# ------------------------------------------------------------------------ this machine


def _backends(config: PipelineConfig) -> Iterator[Finding]:
    for kind in BACKEND_KINDS:
        spec = backend_spec(kind, config)
        if spec is None:
            continue
        try:
            backend = create_backend(kind, config)
        except StreamevalError as exc:
            message = one_line(str(exc))
            head, _, tail = message.rpartition("; ")
            fix = (
                tail
                if head and re.match(r"(fetch|pip|pass|clone|get|install|download)", tail, re.I)
                else (f"pip install -e '.[heavy]' and see docs/cli.md#backends for {spec}")
            )
            yield Finding("FAIL", f"--{kind} {spec}", head or message, fix)
            continue
        except ImportError as exc:
            yield Finding(
                "FAIL", f"--{kind} {spec}", one_line(str(exc)), "pip install -e '.[heavy]'"
            )
            continue
        closer = getattr(backend, "close", None)
        if callable(closer):
            closer()
        yield Finding("ok", f"--{kind} {spec}", "ready")


def _codecs() -> Iterator[Finding]:
    try:
        import av
    except ImportError:
        yield Finding("FAIL", "PyAV", "not installed", "pip install av")
        return
    for codec, use in (
        ("libx264rgb", "lossless recordings"),
        ("libx264", "--record lossy"),
        ("libvpx", "WebRTC video (VP8)"),
        ("mjpeg", "MJPEG streams"),
    ):
        mode: Literal["r", "w"] = "r" if codec == "mjpeg" else "w"
        try:
            av.codec.Codec(codec, mode)
        except Exception:
            yield Finding(
                "FAIL",
                f"codec {codec}",
                f"missing from PyAV's FFmpeg ({use})",
                "pip install --force-reinstall av (its wheels bundle FFmpeg with it)",
            )
            continue
        yield Finding("ok", f"codec {codec}", use)


def _cpu_fast_path(config: PipelineConfig) -> Finding:
    from streameval.core import cpu
    from streameval.perception.memory import resolve_cut_detector_name
    from streameval.perception.transnet_runtime import expected_fast_pass

    features = "bfloat16 native" if cpu.has_native_bfloat16() else "no native bfloat16"
    mode = f"{features}, STREAMEVAL_CPU_FEATURES={cpu.mode()}"
    if not config.cuts or resolve_cut_detector_name(config.cuts) != "transnetv2":
        return Finding("ok", "CPU", f"{mode}; no TransNetV2 fast path needed")
    fast = expected_fast_pass()
    if fast == "bf16":
        return Finding("ok", "CPU", f"{mode}; TransNetV2 runs its bfloat16 pass")
    if fast == "int8":
        return Finding("ok", "CPU", f"{mode}; TransNetV2 runs its int8 pass (made once)")
    missing = [m for m in ("openvino", "nncf") if importlib.util.find_spec(m) is None]
    return Finding(
        "warn",
        "CPU",
        f"{mode}; TransNetV2 runs float32 throughout (about 2x slower)",
        f"pip install {' '.join(missing)}" if missing else None,
    )


def _gpu(python: Path | None) -> Finding:
    if shutil.which("nvidia-smi") is None:
        return Finding(
            "FAIL",
            "GPU",
            "nvidia-smi not found (no NVIDIA driver on this machine)",
            "install the NVIDIA driver, or run on a machine with a GPU",
        )
    interpreter = str(python or sys.executable)
    probe = "import torch; print(torch.cuda.is_available(), torch.version.cuda)"
    got = subprocess.run([interpreter, "-c", probe], capture_output=True, text=True, timeout=120)
    if got.returncode != 0:
        return Finding(
            "warn",
            "GPU",
            f"the driver is there; torch is not importable by {interpreter}",
            f"{interpreter} -m pip install torch (a CUDA build)",
        )
    available, cuda = [*got.stdout.split(), "", ""][:2]
    if available != "True":
        return Finding(
            "FAIL",
            "GPU",
            f"torch (CUDA {cuda}) sees no GPU",
            "install a torch build for this driver's CUDA (pip index pytorch.org/whl/cuXYZ)",
        )
    return Finding("ok", "GPU", f"torch sees CUDA {cuda}")

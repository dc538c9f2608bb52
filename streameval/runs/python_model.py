"""``python:MODULE:FACTORY``: building an in-process model, and what it says about itself.

Importing the module and calling the factory run someone else's code: whatever it raises
(``SystemExit`` included) or however long it blocks, the user gets one line naming the URL,
never a traceback and never a hang.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streameval.constants import DEFAULT_FPS
from streameval.errors import BadInputError, one_line
from streameval.inputs.numbers import FPS

if TYPE_CHECKING:
    from streameval.cases.conditioning import Conditioning
    from streameval.protocol.schedule import Schedule
    from streameval.transports.inprocess.driver import InProcessSource

SUPPORTED_SCHEMES = ("python",)
SourceOpener = Callable[..., "InProcessSource"]


def _import_module(module_name: str) -> Any:
    """A module by name, or a file (``python:path/to/adapter.py:MyWorld``)."""
    if not module_name.endswith(".py"):
        return importlib.import_module(module_name)
    path = Path(module_name).resolve()
    if not path.is_file():
        raise ImportError(f"no file {path}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has one
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _import_and_build(module_name: str, attr: str, url: str) -> Any:
    try:
        module = _import_module(module_name)
    except ImportError as exc:
        raise BadInputError(url, f"cannot import {module_name!r}: {one_line(str(exc))}") from None
    except (Exception, SystemExit) as exc:
        raise BadInputError(
            url, f"importing {module_name!r} raised {type(exc).__name__}: {one_line(str(exc))}"
        ) from None
    factory = getattr(module, attr, None)
    if factory is None or not callable(factory):
        raise BadInputError(url, f"{module_name!r} has no callable {attr!r}")
    try:
        return factory()
    except (Exception, SystemExit) as exc:
        raise BadInputError(
            url, f"{attr}() raised {type(exc).__name__}: {one_line(str(exc))}"
        ) from None


def load_python_model(
    url: str,
    app_dir: Path | None = Path("."),
    timeout: float = 300.0,
    python: Path | None = None,
) -> tuple[Any, str]:
    """``python:package.module:factory`` → (model, display name).

    The display name is the model's own ``name`` attribute when it is a non-empty string,
    else its class name — the factory (``make``) names how it is built, not the model.

    The factory is called without arguments; the object must have ``step(key)``. ``app_dir``
    (default: the working directory, as uvicorn's ``--app-dir``) goes first on ``sys.path``,
    so ``attach python:mymodel:make`` finds ``./mymodel.py`` without ``PYTHONPATH=.``. Import
    and factory run in a daemon thread bounded by ``timeout`` seconds (``--step-timeout``).
    """
    scheme, _, rest = url.partition(":")
    if scheme not in SUPPORTED_SCHEMES:
        raise BadInputError(
            url,
            f"unsupported URL scheme {scheme!r} (supported here: {', '.join(SUPPORTED_SCHEMES)})",
        )
    module_name, _, attr = rest.rpartition(":")
    if not module_name or not attr:
        raise BadInputError(url, "expected python:MODULE:FACTORY")
    if python is not None:
        return _bridged(url, module_name, attr, app_dir, timeout, python)
    if app_dir is not None:
        folder = str(Path(app_dir).resolve())
        if folder not in sys.path:
            sys.path.insert(0, folder)
        importlib.invalidate_caches()  # a module written since start-up is found too
    outcome: list[Any] = []

    def build() -> None:
        try:
            outcome.append(_import_and_build(module_name, attr, url))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=build, name=f"attach:{attr}", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise BadInputError(url, f"{attr}() gave no model within {timeout:g} s")
    model = outcome[0]
    if isinstance(model, BadInputError):
        raise model
    if isinstance(model, BaseException):
        raise BadInputError(url, f"{attr}() raised {type(model).__name__}: {model}")
    if not callable(getattr(model, "step", None)):
        raise BadInputError(
            url, f"{attr}() returned {type(model).__name__}, which has no step(key)"
        )
    return model, model_name(model)


def _bridged(
    url: str, module: str, factory: str, app_dir: Path | None, timeout: float, python: Path
) -> tuple[Any, str]:
    """The adapter in the interpreter ``python`` (``--python``): ``transports/bridge``. Its
    load and each step are bounded by ``timeout`` as in process; the load's output is shown."""
    from streameval.transports.bridge.host import BridgedModel, echo_to_stderr

    if not python.exists():
        raise BadInputError(f"--python {python}", "no such file")
    if not os.access(python, os.X_OK):
        raise BadInputError(f"--python {python}", "not an executable")
    if module.endswith(".py"):
        module = str(Path(module).resolve())  # the worker runs in app_dir
    model = BridgedModel(
        python,
        module,
        factory,
        url=url,
        app_dir=None if app_dir is None else Path(app_dir).resolve(),
        load_timeout=timeout,
        step_timeout=timeout,
        echo=echo_to_stderr(f"  [{factory}] "),
    )
    return model, model_name(model)


def model_name(model: object) -> str:
    """How an in-process model is named in results without ``--model-name``: its ``name``
    attribute when that is a non-empty string, else its class name."""
    try:
        name = getattr(model, "name", None)
    except Exception:  # a property that raises names nothing
        name = None
    if isinstance(name, str) and name.strip():
        return name.strip()
    return type(model).__name__


def model_size(model: object, name: str) -> int | None:
    """``model.width``/``height`` when it is a plausible frame side; otherwise the first frame
    sets the size (a declared size is only a hint, the frames are checked either way)."""
    from streameval.inputs.numbers import FRAME_SIDE

    value = getattr(model, name, None)
    if isinstance(value, int) and not isinstance(value, bool):
        return value if FRAME_SIDE.low <= value <= FRAME_SIDE.high else None
    return None


def model_fps(model: Any, override: float | None, url: str) -> float:
    """The fps to drive ``model`` at: ``--fps``, else ``model.fps``, else 16 (``DEFAULT_FPS``)."""
    if override is not None:
        return FPS.check(override, "--fps")
    try:
        value = getattr(model, "fps", DEFAULT_FPS)
    except Exception as exc:
        raise BadInputError(url, f"model.fps raised {type(exc).__name__}: {exc}") from None
    return FPS.check(value, f"{url} (model.fps)")


def model_source_opener(model: Any, name: str, *, step_timeout: float, origin: str) -> SourceOpener:
    """``open(schedule, episode=, suite=, trajectory=None)`` for an in-process ``model``, shared
    by every episode of one run: model calls run in the model's own thread bounded by
    ``step_timeout``; ``reset()`` is called before each episode when the model has it (with a
    case's ``conditioning``: ``reset(image=, prompt=, intrinsics=)`` by the names it takes); a
    model that hung once is not driven again (its thread may still be inside it)."""
    from streameval.transports.inprocess.driver import InProcessSource
    from streameval.transports.inprocess.model_thread import ModelHealth

    if not callable(getattr(model, "step", None)):
        raise BadInputError(origin, f"{type(model).__name__} has no step(key)")
    health = ModelHealth()

    def open_source(
        schedule: Schedule,
        *,
        episode: str,
        suite: str,
        trajectory: str | None = None,
        conditioning: Conditioning | None = None,
    ) -> InProcessSource:
        if health.hung is not None:
            raise BadInputError(name, f"not driven again: {health.hung}")
        return InProcessSource(
            model,
            schedule,
            episode=episode,
            model_name=name,
            suite=suite,
            width=model_size(model, "width"),
            height=model_size(model, "height"),
            step_timeout=step_timeout,
            reset=callable(getattr(model, "reset", None)),
            health=health,
            trajectory=trajectory,
            conditioning=conditioning,
        )

    return open_source

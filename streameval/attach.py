"""Resolving ``attach`` URLs. ``python:MODULE:FACTORY`` builds an in-process model."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from streameval.errors import BadInputError

SUPPORTED_SCHEMES = ("python",)


def load_python_model(url: str, app_dir: Path | None = Path(".")) -> tuple[Any, str]:
    """``python:package.module:factory`` → (model, display name).

    The factory is called without arguments; the object must have ``step(key)``. ``app_dir``
    (default: the working directory, as uvicorn's ``--app-dir``) goes first on ``sys.path``,
    so ``attach python:mymodel:make`` finds ``./mymodel.py`` without ``PYTHONPATH=.``.
    """
    scheme, _, rest = url.partition(":")
    if scheme not in SUPPORTED_SCHEMES:
        raise BadInputError(
            url,
            f"unsupported URL scheme {scheme!r} (supported here: {', '.join(SUPPORTED_SCHEMES)})",
        )
    module_name, _, attr = rest.partition(":")
    if not module_name or not attr:
        raise BadInputError(url, "expected python:MODULE:FACTORY")
    if app_dir is not None:
        folder = str(Path(app_dir).resolve())
        if folder not in sys.path:
            sys.path.insert(0, folder)
        importlib.invalidate_caches()  # a module written since start-up is found too
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BadInputError(url, f"cannot import {module_name!r}: {exc}") from None
    factory = getattr(module, attr, None)
    if factory is None or not callable(factory):
        raise BadInputError(url, f"{module_name!r} has no callable {attr!r}")
    model = factory()
    if not callable(getattr(model, "step", None)):
        raise BadInputError(
            url, f"{attr}() returned {type(model).__name__}, which has no step(key)"
        )
    return model, attr

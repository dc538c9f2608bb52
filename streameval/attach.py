"""Resolving ``attach`` URLs. ``python:MODULE:FACTORY`` builds an in-process model."""

from __future__ import annotations

import importlib
from typing import Any

from streameval.errors import BadInputError

SUPPORTED_SCHEMES = ("python",)


def load_python_model(url: str) -> tuple[Any, str]:
    """``python:package.module:factory`` → (model, display name).

    The factory is called without arguments; the object must have ``step(key)``.
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

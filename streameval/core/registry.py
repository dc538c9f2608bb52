"""Backends registered by name with lazy ``"module:attr"`` targets.

torch/transformers-backed backends are imported only when chosen (lm-evaluation-harness habit);
an unknown name fails with the list of known names and a "did you mean".
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from typing import Any


class UnknownBackendError(ValueError):
    """A backend name that is not registered for that job."""


class Registry:
    """Name -> lazy factory target for one job (flow, depth, embedding, ...)."""

    def __init__(self, job: str) -> None:
        self.job = job
        self._targets: dict[str, str] = {}

    def register(self, name: str, target: str) -> None:
        """Register ``target`` (``"package.module:attr"``) under ``name``."""
        self._targets[name] = target

    def names(self) -> list[str]:
        return sorted(self._targets)

    def resolve(self, name: str) -> Callable[..., Any]:
        """Import and return the factory registered as ``name``."""
        try:
            target = self._targets[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._targets, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UnknownBackendError(
                f"unknown {self.job} backend {name!r} (known: {', '.join(self.names())}){hint}"
            ) from None
        module_name, _, attr = target.partition(":")
        factory: Callable[..., Any] = getattr(importlib.import_module(module_name), attr)
        return factory

    def create(self, name: str, **kwargs: Any) -> Any:
        return self.resolve(name)(**kwargs)


def split_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name"`` or ``"name:model"`` (a local weights directory or a hub id) -> (name, kwargs).

    How a heavy backend is pointed at its weights from the command line, e.g.
    ``--depth depth-anything:/models/Depth-Anything-V2-Small-hf``.
    """
    name, sep, model = spec.partition(":")
    return name, ({"model": model} if sep and model else {})

"""streameval: a streaming, real-time evaluator for live world-model rollouts.

Python API (docs/python-api.md): ``streameval.evaluate(model, out=...)`` and
``await streameval.aevaluate(...)``; both return an ``Evaluation``. They are loaded on first
use, so ``import streameval`` stays cheap (no OpenCV, no torch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from streameval.api import Evaluation, aevaluate, evaluate

__all__ = ["Evaluation", "__version__", "aevaluate", "evaluate"]


def __getattr__(name: str) -> Any:
    if name in ("Evaluation", "aevaluate", "evaluate"):
        from streameval import api

        return getattr(api, name)
    raise AttributeError(f"module 'streameval' has no attribute {name!r}")

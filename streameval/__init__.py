"""streameval: a streaming, real-time evaluator for live world-model rollouts.

Python API (docs/python-api.md): ``streameval.evaluate(model, out=...)`` and
``await streameval.aevaluate(...)``; both return an ``Evaluation``.
``streameval.confidence_sequence(values, population)``: the anytime-valid interval on a column's
full-set value after each case. Importing stays cheap
(no OpenCV, no torch): the pipeline and its backends load when an episode runs.
"""

from __future__ import annotations

# First: ``STREAMEVAL_CPU_FEATURES=baseline`` caps the libraries as this module is imported,
# before any of them is (streameval/core/cpu.py); worker processes started later inherit it.
from streameval.core import cpu as _cpu  # noqa: F401

# isort: split
from streameval.api import Evaluation, aevaluate, evaluate
from streameval.core.version import __version__
from streameval.metrics.anytime import confidence_sequence

__all__ = ["Evaluation", "__version__", "aevaluate", "confidence_sequence", "evaluate"]

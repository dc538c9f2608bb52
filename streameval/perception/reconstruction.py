"""Reconstruction for Global Memory (docs/methods.md#memory-metrics): per view, a camera-to-world
pose, a z-depth map
and intrinsics for that depth map (``GlobalView``).

Two ways to get views:

- ``views_from_frames`` (``streameval.metrics.fits.geometry``) — pose + depth sent by the model with
  each frame, or read from a sidecar. No network, so the numbers only depend on what the
  model said about itself.
- A :class:`ReconstructionBackend` that reconstructs from the images alone. WorldMark uses
  VGGT(-Omega); transformers has no VGGT class and the ``vggt`` package is not on the package
  index (``pip download vggt`` finds no distribution), so the ``vggt`` entry raises
  BackendUnavailableError naming the missing package rather than substituting something
  else. There is deliberately no CPU default: a made-up reconstruction would give a made-up
  number (the metric says not_applicable instead).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from streameval.core.registry import backend_registry
from streameval.errors import BackendUnavailableError
from streameval.metrics.memory.global_memory import GlobalView


class ReconstructionBackend(Protocol):
    """Joint reconstruction of a few frames (RGB uint8 H×W×3, about 1 s apart) -> one
    GlobalView per image, in the same order, in one shared world frame."""

    name: str

    def reconstruct(self, images: Sequence[npt.NDArray[np.uint8]]) -> list[GlobalView]: ...


VGGT_PACKAGE = "vggt"


class VggtReconstruction:
    """VGGT (WorldMark's Global Memory reconstruction) — not available in this environment.

    transformers ships no VGGT class and the ``vggt`` package (facebookresearch/vggt) is not on
    the package index, so there is nothing to install from here. If a ``vggt`` package is
    importable this still refuses: its API and weights have not been tested with this
    evaluator, and an unverified reconstruction would put an unverified number in the
    Global Memory column.
    """

    name = "vggt"

    def __init__(self, **_options: Any) -> None:
        if importlib.util.find_spec(VGGT_PACKAGE) is None:
            raise BackendUnavailableError(
                "vggt reconstruction backend needs the Python package 'vggt' "
                "(facebookresearch/vggt, with its VGGT-1B weights), which is not installed and "
                "not on the package index; transformers has no VGGT class. Without it, Global "
                "Memory needs pose + depth from the model or a sidecar (views_from_frames)"
            )
        raise BackendUnavailableError(
            "vggt reconstruction backend: the 'vggt' package is installed, but streameval has "
            "no tested adapter for it yet; use pose + depth from the model or a sidecar"
        )

    def reconstruct(self, images: Sequence[npt.NDArray[np.uint8]]) -> list[GlobalView]:
        raise BackendUnavailableError("vggt reconstruction backend is not available")


RECONSTRUCTION_BACKENDS = backend_registry("reconstruction backend")
RECONSTRUCTION_BACKENDS.register("vggt", "streameval.perception.reconstruction:VggtReconstruction")


def create_reconstruction_backend(name: str, **kwargs: Any) -> ReconstructionBackend:
    """Build the reconstruction backend registered as ``name``."""
    backend: ReconstructionBackend = RECONSTRUCTION_BACKENDS.create(name, **kwargs)
    return backend

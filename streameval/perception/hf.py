"""Loading transformers models from local files only, with errors that say what is missing.

Heavy backends (DINOv2, Depth-Anything) never download: the evaluator runs offline and a silent
download would make a run's result depend on the network. ``from_pretrained`` is always called
with ``local_files_only=True``; before that, :func:`resolve_pretrained` checks the files itself
so that the error names the exact file (``config.json``, ``model.safetensors``) and the command
that fetches it, instead of transformers' generic "couldn't connect" message (which, without
``HF_HUB_OFFLINE=1``, only comes after ~20–90 s of retries for each missing hub file).

Image preprocessing is done with cv2/numpy (:func:`resize_rgb`, :func:`normalize_imagenet`) so
that torchvision is not needed (it pins a torch release of its own, a CUDA build of several GB).
torch and transformers are untyped at this boundary: they are handled as ``Any``.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt

from streameval.errors import BackendUnavailableError

INSTALL_HINT = "pip install 'streameval[heavy]' (torch==2.13.0 CPU wheel, transformers)"
CONFIG_FILE = "config.json"
# transformers looks for these, in this order; a sharded checkpoint has an index file.
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

FloatImage = npt.NDArray[np.float32]


def import_heavy(job: str) -> tuple[Any, Any]:
    """Import and return ``(torch, transformers)``, or raise BackendUnavailableError naming
    what is missing and how to install it (``job`` names the backend in the message)."""
    modules = []
    for name in ("torch", "transformers"):
        try:
            modules.append(importlib.import_module(name))
        except ImportError as err:
            raise BackendUnavailableError(
                f"{job} needs the Python package {name!r}, which is not installed "
                f"({err}); install it with: {INSTALL_HINT}"
            ) from None
    return modules[0], modules[1]


def _looks_like_path(model: str | Path) -> bool:
    """A Path, an existing directory (transformers itself prefers a local directory over a hub
    id of the same name), or a string that can only be a path (a hub id is ``org/name``)."""
    if isinstance(model, Path):
        return True
    text = str(model)
    return text.startswith(("/", ".", "~")) or text.count("/") > 1 or os.path.isdir(text)


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """Where the weights are: ``source`` is passed to ``from_pretrained``; ``description``
    (a local directory or ``hub id @ cache dir``) goes into provenance and error messages."""

    source: str
    description: str


def resolve_pretrained(model: str | Path, *, job: str, default_repo: str) -> ResolvedModel:
    """Check that ``model`` (a local directory or a hub id already in the HF cache) has a
    ``config.json`` and weights, without touching the network.

    Raises BackendUnavailableError naming the missing file and how to get it
    (``hf download <repo> --local-dir DIR`` on a machine with network access).
    """
    if _looks_like_path(model):
        directory = Path(model).expanduser()
        get = (
            f"download it with `hf download {default_repo} --local-dir {directory}` on a machine "
            "with network access, or point the backend at a directory saved with "
            "save_pretrained()"
        )
        if not directory.is_dir():
            raise BackendUnavailableError(
                f"{job}: model directory {directory} does not exist; {get}"
            )
        if not (directory / CONFIG_FILE).is_file():
            raise BackendUnavailableError(f"{job}: {directory / CONFIG_FILE} is missing; {get}")
        if not any((directory / name).is_file() for name in WEIGHT_FILES):
            raise BackendUnavailableError(
                f"{job}: no weights in {directory} (looked for {', '.join(WEIGHT_FILES)}); {get}"
            )
        return ResolvedModel(str(directory), str(directory))
    repo = str(model)
    try:
        from huggingface_hub import constants, try_to_load_from_cache
    except ImportError:
        raise BackendUnavailableError(
            f"{job} needs huggingface_hub (installed with transformers); {INSTALL_HINT}"
        ) from None
    cache = constants.HF_HUB_CACHE
    get = (
        f"fetch it with `hf download {repo}` on a machine with network access (same "
        f"HF_HUB_CACHE), or pass a local directory"
    )

    def cached(filename: str) -> bool:
        return isinstance(try_to_load_from_cache(repo, filename), str)

    if not cached(CONFIG_FILE):
        raise BackendUnavailableError(
            f"{job}: {repo} is not in the Hugging Face cache {cache} ({CONFIG_FILE} missing); {get}"
        )
    if not any(cached(name) for name in WEIGHT_FILES):
        raise BackendUnavailableError(
            f"{job}: {repo} in the Hugging Face cache {cache} has no weights "
            f"(looked for {', '.join(WEIGHT_FILES)}); {get}"
        )
    return ResolvedModel(repo, f"{repo} @ {cache}")


def load_pretrained(model_class: Any, resolved: ResolvedModel, *, job: str, device: str) -> Any:
    """``model_class.from_pretrained(local_files_only=True)`` in eval mode on ``device``; any
    loading error becomes BackendUnavailableError naming the model."""
    try:
        net = model_class.from_pretrained(resolved.source, local_files_only=True)
    except Exception as err:  # corrupt or mismatched files: the backend cannot run here
        raise BackendUnavailableError(
            f"{job}: cannot load {resolved.description}: {type(err).__name__}: {err}"
        ) from err
    return net.to(device).eval()


def as_rgb_uint8(image: npt.NDArray[Any], what: str) -> npt.NDArray[np.uint8]:
    """Check an RGB uint8 H×W×3 image (ValueError naming ``what`` otherwise)."""
    arr = np.asarray(image)
    if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] != 3 or min(arr.shape[:2]) < 1:
        raise ValueError(
            f"{what}: expected an RGB uint8 image of shape (H, W, 3), got {arr.dtype} {arr.shape}"
        )
    return arr


def resize_rgb(image: npt.NDArray[np.uint8], height: int, width: int) -> npt.NDArray[np.uint8]:
    """Resize with cv2: INTER_AREA when shrinking (an antialiased filter, closest to the PIL
    bicubic-with-antialiasing the reference image processors use), bicubic when enlarging."""
    h, w = image.shape[:2]
    if (h, w) == (height, width):
        return image
    shrinking = height <= h and width <= w
    interp = cv2.INTER_AREA if shrinking else cv2.INTER_CUBIC
    out = np.asarray(cv2.resize(image, (width, height), interpolation=interp), dtype=np.uint8)
    return out


def normalize_imagenet(image: npt.NDArray[np.uint8]) -> FloatImage:
    """uint8 H×W×3 -> float32 3×H×W, rescaled to [0, 1] and ImageNet-normalised."""
    x = image.astype(np.float32) * np.float32(1.0 / 255.0)
    x -= np.asarray(IMAGENET_MEAN, dtype=np.float32)
    x /= np.asarray(IMAGENET_STD, dtype=np.float32)
    out: FloatImage = np.ascontiguousarray(x.transpose(2, 0, 1))
    return out

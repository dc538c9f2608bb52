"""Gram-matrix texture distances for memory_rendering_recovery
(docs/methods.md#memory_rendering_recovery).

WorldAtlas measures texture recovery with a VGG Gram distance g (score ``exp(−g / 0.002)``).
VGG weights are a download this evaluator never makes, so the CPU default is a statistic of
our own with the same shape — uncentred Gram matrices ``F Fᵀ / (C·H·W)`` of a filter bank,
mean squared difference summed over two scales — calibrated onto the VGG distance's scale
(:class:`FilterBankGram`, ``cpu-filterbank-gram``). The VGG backends (``vgg16-gram``,
``vgg19-gram``) load torchvision's ImageNet checkpoints from the torch hub cache (or a path),
never download, and need torch only (the VGG feature stack is rebuilt here, so torchvision,
which would pull a CUDA torch, is not needed). Every backend has its own name, recorded in
provenance: the CPU statistic's numbers are not VGG's.

A backend is ``distance(frame_a, frame_b) -> float`` on RGB uint8 frames (the second resized
to the first), 0 for identical frames. :func:`pair_distances` measures the revisit pairs of an
episode: both backends here split into a per-frame statistic and a comparison, so a frame shared
by several pairs (the same array object) is measured once, bit for bit as ``distance`` would.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import cv2
import numpy as np

from streameval.core.arrays import F64, Image
from streameval.core.parallel import thread_map
from streameval.core.registry import backend_registry
from streameval.errors import BackendUnavailableError
from streameval.perception.hf import IMAGENET_MEAN, IMAGENET_STD, as_rgb_uint8

GRAM_IMAGE_SHORT_SIDE = 128  # the VGG input short side of WorldAtlas's CPU path
# Calibration of the CPU statistic (see FilterBankGram): a 1/f noise texture against itself
# blurred by a Gaussian of sigma 1.5 px at the 128-px scale measures GRAM_TAU = 0.002, with the
# Gram matrices taken per cell of a FILTER_BANK_GRAM_GRID × FILTER_BANK_GRAM_GRID grid (the
# global statistic, grid 1, measured it with scale 0.05089).
FILTER_BANK_GRAM_SCALE = 0.04545
FILTER_BANK_GRAM_GRID = 2


class GramBackend(Protocol):
    """A texture distance between two RGB uint8 frames; 0 for identical frames."""

    name: str

    def distance(self, frame_a: Image, frame_b: Image) -> float: ...


G = TypeVar("G")


def _distinct_pairs(
    statistic: Callable[[Image], G],
    compare: Callable[[G, G], float],
    frames_a: Sequence[Image],
    frames_b: Sequence[Image],
    *,
    threads: bool,
) -> list[float]:
    """``compare(statistic(a), statistic(b resized to a))`` per pair, each distinct frame (by
    identity) measured once, on a few threads when ``threads`` (the statistic is numpy/OpenCV
    and releases the GIL; results in order, so the values are the serial loop's)."""
    revisits = [_resize_like(b, a) for a, b in zip(frames_a, frames_b, strict=True)]
    distinct: dict[int, Image] = {}
    for frame in [*frames_a, *revisits]:
        distinct.setdefault(id(frame), frame)
    frames = list(distinct.values())
    measured = thread_map(statistic, frames) if threads else [statistic(f) for f in frames]
    by_id = dict(zip(distinct, measured, strict=True))
    return [compare(by_id[id(a)], by_id[id(b)]) for a, b in zip(frames_a, revisits, strict=True)]


def pair_distances(
    backend: GramBackend, frames_a: Sequence[Image], frames_b: Sequence[Image]
) -> list[float]:
    """The backend's distance of every pair ``(frames_a[k], frames_b[k])``; a backend with its
    own ``pair_distances`` (both here: each distinct frame once) answers for all pairs at once,
    any other is asked pair by pair."""
    batch = getattr(backend, "pair_distances", None)
    if callable(batch):
        return [float(d) for d in batch(frames_a, frames_b)]
    return [float(backend.distance(a, b)) for a, b in zip(frames_a, frames_b, strict=True)]


def _resize_like(frame: Image, target: Image) -> Image:
    if frame.shape[:2] == target.shape[:2]:
        return frame
    size = (target.shape[1], target.shape[0])
    return np.asarray(cv2.resize(frame, size, interpolation=cv2.INTER_CUBIC), dtype=np.uint8)


def _short_side(frame: Image, side: int = GRAM_IMAGE_SHORT_SIDE) -> Image:
    h, w = frame.shape[:2]
    scale = side / min(h, w)
    size = (max(round(w * scale), 8), max(round(h * scale), 8))
    return np.asarray(cv2.resize(frame, size, interpolation=cv2.INTER_AREA), dtype=np.uint8)


class FilterBankGram:
    """``cpu-filterbank-gram``: Gram matrices of an OpenCV filter bank, per-image normalised.

    The frame's short side goes to 128; each RGB channel loses its own mean and all three are
    divided by one contrast (the standard deviation pooled over the channels), so a change of
    brightness, white balance or contrast leaves the statistic unchanged: lighting is what the
    CIELAB terms of the metric measure, texture is what this one measures. Features per channel:
    the channel, Sobel x/y, a Laplacian and four Gabor orientations (9×9, sigma 2, wavelength 6),
    at full and half resolution (24 maps × 2 scales, as VGG's early blocks see two scales);
    uncentred Gram ``F Fᵀ / (C·H·W)`` per cell of a 2×2 grid (the normalisation stays the
    frame's, so a cell's Gram also carries where its colours and textures lie), mean squared Gram
    difference averaged over the cells and summed over the scales. The grid makes the statistic
    layout-aware: a world that redraws the scene in the same style keeps its global texture
    statistics but not which quadrant holds which texture (the amnesia world of
    bench/worldatlas_memory.py), while a small viewpoint change moves each cell's content little.
    VGG backends keep WorldAtlas's global Gram.

    Calibration (docs/methods.md#cpu-defaults-and-backends): scaled by
    ``FILTER_BANK_GRAM_SCALE`` (0.04545 for the 2×2 grid; 0.05089 for the global statistic) so
    that pink noise against itself blurred by sigma 1.5 px (a clear loss of fine detail)
    measures 0.002, the VGG distance's e⁻¹ point. A proxy: its values
    are not VGG's.
    """

    name = "cpu-filterbank-gram"

    def __init__(self, grid: int = FILTER_BANK_GRAM_GRID, scale: float | None = None) -> None:
        self.grid = int(grid)
        self.scale = FILTER_BANK_GRAM_SCALE if scale is None else float(scale)
        self._gabors = [
            cv2.getGaborKernel((9, 9), 2.0, theta, 6.0, 0.5, 0.0, ktype=cv2.CV_64F)
            for theta in (0.0, np.pi / 4, np.pi / 2, 3 * np.pi / 4)
        ]

    def grams(self, frame: Image) -> list[F64]:
        """The Gram matrices (24 × 24) of one frame: per scale, one per grid cell (row-major)."""
        image = np.asarray(_short_side(as_rgb_uint8(frame, self.name)), dtype=np.float64)
        image = image - image.reshape(-1, 3).mean(axis=0)
        contrast = float(image.std())
        image = image / max(contrast, 1e-6)
        grams: list[F64] = []
        level = image
        n = self.grid
        for _ in range(2):
            responses: list[F64] = []
            for c in range(3):
                x = np.ascontiguousarray(level[..., c])
                responses += [
                    x,
                    np.asarray(cv2.Sobel(x, cv2.CV_64F, 1, 0, ksize=3)),
                    np.asarray(cv2.Sobel(x, cv2.CV_64F, 0, 1, ksize=3)),
                    np.asarray(cv2.Laplacian(x, cv2.CV_64F, ksize=3)),
                ]
                responses += [np.asarray(cv2.filter2D(x, cv2.CV_64F, g)) for g in self._gabors]
            stack = np.stack(responses)
            h, w = stack.shape[1:]
            rows = np.linspace(0, h, n + 1).round().astype(int)
            cols = np.linspace(0, w, n + 1).round().astype(int)
            for r0, r1 in itertools.pairwise(rows):
                for c0, c1 in itertools.pairwise(cols):
                    features = stack[:, r0:r1, c0:c1].reshape(len(responses), -1)
                    grams.append(features @ features.T / features.size)
            level = np.asarray(cv2.pyrDown(level), dtype=np.float64)
        return grams

    def compare(self, grams_a: list[F64], grams_b: list[F64]) -> float:
        """The calibrated distance of two frames' Gram matrices (:meth:`grams`)."""
        raw = sum(float(np.mean((x - y) ** 2)) for x, y in zip(grams_a, grams_b, strict=True))
        return self.scale * raw / (self.grid * self.grid)

    def distance(self, frame_a: Image, frame_b: Image) -> float:
        a = as_rgb_uint8(frame_a, self.name)
        return self.compare(
            self.grams(a), self.grams(_resize_like(as_rgb_uint8(frame_b, self.name), a))
        )

    def pair_distances(self, frames_a: Sequence[Image], frames_b: Sequence[Image]) -> list[float]:
        """:meth:`distance` of every pair, each distinct frame's Grams once, on a few threads
        (pure numpy/OpenCV, no state: thread-safe)."""
        a = [as_rgb_uint8(f, self.name) for f in frames_a]
        b = [as_rgb_uint8(f, self.name) for f in frames_b]
        return _distinct_pairs(self.grams, self.compare, a, b, threads=True)


# --- VGG ----------------------------------------------------------------------------------

# torchvision's feature stacks ("M" = 2×2 max-pool) and checkpoint file names (torch hub).
VGG_LAYOUTS: dict[str, tuple[int | str, ...]] = {
    "vgg16": (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M"),
    "vgg19": (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M"),
}
VGG_CHECKPOINTS = {"vgg16": "vgg16-397923af.pth", "vgg19": "vgg19-dcbb9e9d.pth"}
# Gatys et al.'s style layers: the first ReLU of each of the first four blocks.
VGG_STYLE_BLOCKS = 4


def torch_hub_checkpoint(filename: str) -> Path:
    """Where torch hub keeps a downloaded checkpoint ($TORCH_HOME, default ~/.cache/torch)."""
    home = os.environ.get("TORCH_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "torch"
    )
    return Path(home) / "hub" / "checkpoints" / filename


class VggGram:
    """``vgg16-gram`` / ``vgg19-gram``: Gram distance on VGG ReLU features (Gatys et al.).

    Short side 128, ImageNet normalisation, the first ReLU of blocks 1–4 (relu1_1 … relu4_1),
    uncentred Gram ``F Fᵀ / (C·H·W)`` per layer, mean squared difference summed over layers.
    ``weights``: a checkpoint path, default torchvision's file in the torch hub cache; a missing
    file raises BackendUnavailableError naming it. ``layout`` (tests) replaces the channel
    widths with a tiny random-weight network (``weights="random"``).
    """

    def __init__(
        self,
        arch: str = "vgg16",
        weights: str | None = None,
        device: str = "cpu",
        layout: tuple[int | str, ...] | None = None,
    ) -> None:
        try:
            import torch
        except ImportError:
            raise BackendUnavailableError(
                f"{arch}-gram needs the Python package 'torch', which is not installed; "
                "install it with: pip install 'streameval[heavy]'"
            ) from None
        if arch not in VGG_LAYOUTS:
            raise BackendUnavailableError(f"unknown VGG {arch!r}; known: {', '.join(VGG_LAYOUTS)}")
        self._torch = torch
        self._device = device
        self.name = f"{arch}-gram"
        stack, self._style = self._build(torch, layout or VGG_LAYOUTS[arch])
        if weights == "random":
            torch.manual_seed(0)
            self.weights = "random"
        else:
            path = (
                Path(weights).expanduser()
                if weights
                else torch_hub_checkpoint(VGG_CHECKPOINTS[arch])
            )
            if not path.is_file():
                raise BackendUnavailableError(
                    f"{self.name}: VGG weights {path} are missing; copy torchvision's "
                    f"{VGG_CHECKPOINTS[arch]} there (torchvision.models.{arch}(weights="
                    "'IMAGENET1K_V1') fetches it on a machine with network access) or pass "
                    f"{self.name}:PATH"
                )
            try:
                state = torch.load(path, map_location="cpu", weights_only=True)
                features = {
                    k.removeprefix("features."): v
                    for k, v in state.items()
                    if k.startswith("features.") and int(k.split(".")[1]) < len(stack)
                }
                stack.load_state_dict(features)
            except Exception as err:
                raise BackendUnavailableError(
                    f"{self.name}: cannot load {path}: {type(err).__name__}: {err}"
                ) from err
            self.weights = str(path)
        self._net = stack.to(device).eval()

    @staticmethod
    def _build(torch: Any, layout: tuple[int | str, ...]) -> tuple[Any, list[int]]:
        """torchvision's ``features`` Sequential up to block 4 (same indices, so that the
        checkpoint's ``features.N`` keys load) and the indices of the style ReLUs."""
        nn = torch.nn
        layers: list[Any] = []
        style: list[int] = []
        channels, first_in_block, blocks = 3, True, 0
        for item in layout:
            if item == "M":
                blocks += 1
                if blocks >= VGG_STYLE_BLOCKS:
                    break
                layers.append(nn.MaxPool2d(2, 2))
                first_in_block = True
                continue
            layers += [nn.Conv2d(channels, int(item), 3, padding=1), nn.ReLU(inplace=False)]
            if first_in_block:
                style.append(len(layers) - 1)
                first_in_block = False
            channels = int(item)
        return nn.Sequential(*layers), style

    def _grams(self, frame: Image) -> list[Any]:
        torch = self._torch
        image = _short_side(frame).astype(np.float32) / np.float32(255.0)
        image = np.asarray(
            (image - np.asarray(IMAGENET_MEAN, np.float32)) / np.asarray(IMAGENET_STD, np.float32),
            dtype=np.float32,
        )
        x = torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1)))[None].to(self._device)
        grams = []
        with torch.inference_mode():
            for index, layer in enumerate(self._net):
                x = layer(x)
                if index in self._style:
                    _, c, h, w = x.shape
                    f = x.reshape(c, h * w).double()
                    grams.append(f @ f.T / (c * h * w))
        return grams

    @staticmethod
    def _compare(grams_a: list[Any], grams_b: list[Any]) -> float:
        total = 0.0
        for ga, gb in zip(grams_a, grams_b, strict=True):
            total += float(((ga - gb) ** 2).mean())
        return total

    def distance(self, frame_a: Image, frame_b: Image) -> float:
        a = as_rgb_uint8(frame_a, self.name)
        b = _resize_like(as_rgb_uint8(frame_b, self.name), a)
        return self._compare(self._grams(a), self._grams(b))

    def pair_distances(self, frames_a: Sequence[Image], frames_b: Sequence[Image]) -> list[float]:
        """:meth:`distance` of every pair, each distinct frame through the network once
        (serially: torch has its own threads)."""
        a = [as_rgb_uint8(f, self.name) for f in frames_a]
        b = [as_rgb_uint8(f, self.name) for f in frames_b]
        return _distinct_pairs(self._grams, self._compare, a, b, threads=False)


def vgg16_gram(model: str | None = None, device: str = "cpu") -> VggGram:
    """``vgg16-gram[:CHECKPOINT]``."""
    return VggGram("vgg16", model, device)


def vgg19_gram(model: str | None = None, device: str = "cpu") -> VggGram:
    """``vgg19-gram[:CHECKPOINT]``."""
    return VggGram("vgg19", model, device)


GRAM_BACKENDS = backend_registry("Gram backend")
GRAM_BACKENDS.register("cpu-filterbank-gram", "streameval.perception.gram:FilterBankGram")
GRAM_BACKENDS.register("vgg16-gram", "streameval.perception.gram:vgg16_gram")
GRAM_BACKENDS.register("vgg19-gram", "streameval.perception.gram:vgg19_gram")
DEFAULT_GRAM_BACKEND = "cpu-filterbank-gram"


def create_gram_backend(name: str = DEFAULT_GRAM_BACKEND, **kwargs: Any) -> GramBackend:
    """Build the Gram backend registered as ``name`` (``vgg16-gram:PATH`` reaches the factory
    as ``model=PATH``); torch is imported only for a VGG backend."""
    backend: GramBackend = GRAM_BACKENDS.create(name, **kwargs)
    return backend

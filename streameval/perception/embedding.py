"""Appearance embeddings for Local and Revisit Memory (docs/methods.md#memory-metrics): one unit
vector per frame,
compared by ``1 − cos``.

WorldMark's backbone is DINOv2-base "patch-mean": L2-normalise every patch token, average them,
re-normalise (:class:`Dinov2PatchMean`). It needs weights that an offline machine does not have,
so the CPU default is a descriptor of our own, :class:`ColorHistRbf` (``cpu-colorhist-rbf``),
that needs none and runs in about a millisecond per 640×432 frame. Its distances are on another
scale than DINOv2's, so every backend declares a :class:`DescriptorCalibration`: its own
mutation threshold (DINOv2 keeps WorldMark's TAU_MUT = 0.10) and the distance scale that puts
its ``1 − cos`` on WorldMark's scale (``scale × d > TAU_MUT`` ⇔ ``d > tau_mut``). The CPU
descriptor's threshold was chosen from measured distributions (``bench/descriptor_calibration.py``,
``tests/perception/test_descriptor_calibration.py``): clean camera motion on procedural-world
clips and on four unlike scene families stays under it, hard cuts and scene swaps land above it.
Its numbers are *not* DINOv2 numbers; provenance records the backend (``name``) and the
calibration used (docs/methods.md#cpu-defaults-and-backends).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import cv2
import numpy as np
import numpy.typing as npt

from streameval.constants import TAU_MUT
from streameval.core.registry import backend_registry
from streameval.perception.hf import (
    as_rgb_uint8,
    import_heavy,
    load_pretrained,
    normalize_imagenet,
    resize_rgb,
    resolve_pretrained,
)

Embeddings = npt.NDArray[np.float32]  # (B, dim), every row L2-normalised


@dataclass(frozen=True, slots=True)
class DescriptorCalibration:
    """Where a descriptor's ``1 − cos`` means "mutation" (TAU_MUT per backend:
    docs/methods.md#cpu-defaults-and-backends).

    ``tau_mut``: the mutation threshold on this backend's own distances; ``distance_scale``:
    ``TAU_MUT / tau_mut``, the factor Local Memory applies to the distances as they enter its
    kernel, so the kernel and its threshold stay WorldMark's (parity holds: DINOv2's scale is
    exactly 1). Recorded in the cache and in scores.json provenance, so ``rescore`` applies the
    calibration the embeddings were made with, not whatever the code says later.

    ``local_exponent`` (docs/methods.md#cpu-defaults-and-backends): Local Memory's own kernel
    scale. An RBF descriptor's ``1 − cos`` is ``1 − exp(−H²/σ²)``; Local Memory reads it on a
    wider kernel σ_L² as ``1 − (1 − d)^(σ²/σ_L²)`` (``local_exponent = σ²/σ_L²``) before
    ``distance_scale``, and ``tau_mut`` is calibrated on that wider kernel. Revisit Memory keeps
    the embedding's own σ² (``revisit_sigma2``). 1.0 (DINOv2, and caches from before the split):
    Local Memory reads the distances as they are.
    """

    tau_mut: float
    distance_scale: float
    local_exponent: float = 1.0
    sigma2: float | None = None  # the embedding's own kernel width (Revisit Memory's scale)

    @classmethod
    def for_threshold(
        cls, tau_mut: float, *, sigma2: float | None = None, local_sigma2: float | None = None
    ) -> DescriptorCalibration:
        """The calibration whose threshold is ``tau_mut`` on the backend's own distances (on
        the wider kernel ``local_sigma2`` when given, for an RBF descriptor of width ``sigma2``)."""
        if not (0.0 < tau_mut <= 2.0):
            raise ValueError(f"a 1 − cos threshold must lie in (0, 2], got {tau_mut!r}")
        exponent = 1.0
        if local_sigma2 is not None:
            if sigma2 is None or not (0.0 < sigma2 <= local_sigma2):
                raise ValueError(f"local_sigma2 {local_sigma2!r} needs 0 < sigma2 <= it")
            exponent = float(sigma2) / float(local_sigma2)
        return cls(float(tau_mut), TAU_MUT / float(tau_mut), exponent, sigma2)

    def local_distance(self, d: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """``1 − cos`` read on Local Memory's kernel (as ``local_memory`` reads it), unscaled."""
        d = np.asarray(d, dtype=np.float64)
        if self.local_exponent == 1.0:
            return d
        out: npt.NDArray[np.float64] = 1.0 - np.clip(1.0 - d, 1e-6, 1.0) ** self.local_exponent
        return out

    def to_json(self) -> dict[str, float]:
        out = {"tau_mut": self.tau_mut, "distance_scale": self.distance_scale}
        if self.local_exponent != 1.0 and self.sigma2 is not None:
            out.update(
                local_exponent=self.local_exponent,
                local_sigma2=self.sigma2 / self.local_exponent,
                revisit_sigma2=self.sigma2,
            )
        return out


SEED_CALIBRATION = DescriptorCalibration(TAU_MUT, 1.0)
"""DINOv2 patch-mean, WorldMark's descriptor: TAU_MUT on unscaled distances."""


class EmbeddingBackend(Protocol):
    """Appearance embeddings: RGB uint8 H×W×3 images of any size -> (B, dim) float32 rows,
    each L2-normalised, so that ``1 − row_a · row_b`` is the appearance distance. Deterministic:
    a frame's row does not depend on the other images of the call."""

    name: str
    dim: int
    calibration: DescriptorCalibration

    def embed(self, images: Sequence[npt.NDArray[np.uint8]]) -> Embeddings: ...


# --- CPU default --------------------------------------------------------------------------

# Analysis thumbnail: the descriptor is a histogram, so the aspect ratio does not matter and a
# fixed pixel count keeps the cost and the histogram's noise independent of the input size.
# 160×108 is an exact 4× of the analysis frame, shrunk by 4×4 box averages: point sampling
# aliased fine detail (2–8 px stripes, grain), and a slow clean pan over it moved the histogram
# by up to 0.55 (0.19 with box averages; tests/perception/test_descriptor_calibration.py).
_THUMB_W, _THUMB_H = 160, 108
_L_BINS, _AB_BINS = 8, 16  # over cv2's 8-bit Lab (L, a, b each 0..255)
_EDGE_BINS = 4  # floor(log1p(0.3 |∇L|)) clipped: flat, soft, textured, edge
_EDGE_GAIN = 0.3
_N_BINS = _L_BINS * _AB_BINS * _AB_BINS * _EDGE_BINS
# Kernel width, calibrated on procedural-world clips (tests/perception/test_embedding.py):
# 1 − cos ≈ 1 − exp(−H²/σ²) with H² = 1 − Bhattacharyya coefficient of the histograms.
_SIGMA2 = 0.2
_N_FREQ = 384  # 2·384 = 768 dimensions (as DINOv2-base); RFF relative noise ≈ sqrt(2/384) ≈ 7 %
_RFF_SEED = 0x5E_ED_0E_B0
# Two scales of one descriptor (docs/methods.md#cpu-defaults-and-backends). Revisit Memory reads
# the embedding's own σ² = 0.2, which keeps the forget/amnesia contrast. Local Memory reads a
# 5× wider kernel, σ_L² = 1.0: σ² = 0.2 saturates, so a fast clean turn (90 °/s, flat colours:
# max 0.83) sat next to hard cuts and swaps (min 0.90) and lost Local Memory; on σ_L² they are
# max 0.30 against min 0.37 (bench/descriptor_calibration.py). Local Memory's mutation threshold
# on σ_L², measured on clean turns at 15/45/90 °/s over noise textures, flat colours,
# high-frequency detail and outdoor gradients: 90 °/s max 0.87 τ, 45 °/s max 0.40 τ; mutations
# ≥ 1.10 τ.
_LOCAL_SIGMA2 = 1.0
_TAU_MUT_CPU = 0.34
CPU_CALIBRATION = DescriptorCalibration.for_threshold(
    _TAU_MUT_CPU, sigma2=_SIGMA2, local_sigma2=_LOCAL_SIGMA2
)


class ColorHistRbf:
    """``cpu-colorhist-rbf``: a Lab colour × edge-strength histogram, compared with a Gaussian
    kernel on the Hellinger distance, made an explicit embedding by random Fourier features.

    Why this and not a per-patch layout: on procedural-world clips a grid of patch
    statistics (colour mean/std, gradient-orientation histograms, 8×6 cells) moved as much under
    0.5 s of clean strafing past a near object (1 − cos up to 0.12) as across a hard cut (0.12):
    layouts are not translation invariant. A global histogram is — like DINOv2's patch *mean*,
    which also discards where a patch is — and it is what changes when the content changes
    (other objects, other colours). The ratio "hard cut / worst clean 0.5 s step" was ≈ 6 for
    the histogram against ≈ 1 for layouts.

    How: the frame is shrunk to 160×108 (box averages), converted to Lab, and every pixel votes
    into one of 8 (L) × 16 (a) × 16 (b) × 4 (edge strength of L) bins; ``x = sqrt(hist)`` is a
    unit vector and ``1 − x·y`` is the squared Hellinger distance ``H²``. Raw ``H²`` is small
    even between different places (sky and ground dominate every frame), so the embedding is
    the random-Fourier-feature map of the Gaussian kernel
    ``k = exp(−‖x − y‖²/(2σ²)) = exp(−H²/σ²)`` (σ² = 0.2):
    ``φ(x) = [cos(xW), sin(xW)] / sqrt(n)``, ``W ~ N(0, 1/σ²)`` (n = 384 frequencies, drawn once
    from a fixed seed, so every run and machine gets the same W), and ``1 − φ(x)·φ(y)`` estimates
    ``1 − k``: linear in ``H²`` for small changes, saturating towards 1 for unrelated content.
    ``‖φ(x)‖ = 1`` exactly (cos² + sin²), so rows need no further normalisation.

    Measured (procedural world, 640×432, σ² = 0.2; see the tests): 0.5 s (8 frames) of clean
    W/D/R motion ≤ 0.06, one frame ≤ 0.02; a hard cut 0.88–1.03 (a same-look teleport:
    0.26–0.39); another seed 0.17–0.28; a
    360° turn back to the start 0.000 in the clean world and 0.12–0.26 (mean 0.19) in the
    ``forget`` world. Cost ≈ 1.6 ms per frame (loaded 2-core machine); W is 12.6 MB, drawn
    in ~0.1 s at start-up.
    Blind to pure re-arrangements of the same colours (a mirrored frame is "the same place").
    """

    def __init__(self, sigma2: float = _SIGMA2, n_freq: int = _N_FREQ) -> None:
        if not (sigma2 > 0 and np.isfinite(sigma2)):
            raise ValueError(f"sigma2 must be a positive number, got {sigma2!r}")
        if n_freq < 1:
            raise ValueError(f"n_freq must be >= 1, got {n_freq!r}")
        default = sigma2 == _SIGMA2 and n_freq == _N_FREQ
        self.name = "cpu-colorhist-rbf" if default else f"cpu-colorhist-rbf(s2={sigma2},n={n_freq})"
        self.dim = 2 * n_freq
        self.calibration = CPU_CALIBRATION
        # numpy's Generator streams (PCG64 + ziggurat normals) are stable across versions.
        rng = np.random.default_rng(_RFF_SEED)
        w = rng.standard_normal((_N_BINS, n_freq)) / np.sqrt(sigma2)
        self._w = np.ascontiguousarray(w, dtype=np.float32)
        self._scale = np.float32(1.0 / np.sqrt(n_freq))

    def histogram(self, image: npt.NDArray[np.uint8]) -> npt.NDArray[np.float64]:
        """The normalised joint histogram (``_N_BINS`` bins, sums to 1) of one RGB frame."""
        rgb = as_rgb_uint8(image, self.name)
        # Box averages (see _THUMB_W): stable on fine detail that point sampling aliases. Two
        # bilinear halvings are exact 2×2 box averages each on a 640×432 frame (= INTER_AREA's
        # 4×4 box, 0.14 ms instead of 0.54 ms); other sizes get a bilinear first step.
        half = cv2.resize(rgb, (2 * _THUMB_W, 2 * _THUMB_H), interpolation=cv2.INTER_LINEAR)
        thumb = cv2.resize(half, (_THUMB_W, _THUMB_H), interpolation=cv2.INTER_LINEAR)
        lab = cv2.cvtColor(thumb, cv2.COLOR_RGB2LAB)
        lum = lab[..., 0].astype(np.float32)
        gx = cv2.Sobel(lum, cv2.CV_32F, 1, 0)
        gy = cv2.Sobel(lum, cv2.CV_32F, 0, 1)
        edge = np.log1p(cv2.magnitude(gx, gy) * np.float32(_EDGE_GAIN)).astype(np.int32)
        np.minimum(edge, _EDGE_BINS - 1, out=edge)
        lab32 = lab.astype(np.int32)
        li = (lab32[..., 0] * _L_BINS) >> 8
        ai = (lab32[..., 1] * _AB_BINS) >> 8
        bi = (lab32[..., 2] * _AB_BINS) >> 8
        idx = ((li * _AB_BINS + ai) * _AB_BINS + bi) * _EDGE_BINS + edge
        counts = np.bincount(idx.ravel(), minlength=_N_BINS).astype(np.float64)
        hist: npt.NDArray[np.float64] = counts / float(idx.size)
        return hist

    def _embed_one(self, image: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        hist = self.histogram(image)
        nz = np.flatnonzero(hist)  # a few hundred of 8192 bins: gather only those rows of W
        proj = np.sqrt(hist[nz]).astype(np.float32) @ self._w[nz]
        out: npt.NDArray[np.float32] = np.concatenate([np.cos(proj), np.sin(proj)])
        out *= self._scale
        return out

    def embed(self, images: Sequence[npt.NDArray[np.uint8]]) -> Embeddings:
        out = np.empty((len(images), self.dim), dtype=np.float32)
        for k, image in enumerate(images):
            out[k] = self._embed_one(image)
        return out


# --- DINOv2 patch-mean (WorldMark) ---------------------------------------------------------

DINOV2_DEFAULT = "facebook/dinov2-base"


class Dinov2PatchMean:
    """DINOv2 patch-mean (WorldMark): L2-normalise the patch tokens of the last layer
    (``last_hidden_state[:, 1:]``, the CLS token dropped), average, re-normalise.

    Weights come from ``model``: a local directory (``save_pretrained`` layout) or a hub id
    already in the Hugging Face cache; never downloaded (``local_files_only=True``). Missing
    files raise BackendUnavailableError naming them. Preprocessing follows the reference
    processor of ``facebook/dinov2-base`` with cv2/numpy: shortest edge to ``resize_shortest``
    (256) — long edge ``int(256 · long / short)`` —, centre crop ``crop`` (224, top-left at
    ``int((size − crop) / 2)``), ImageNet normalisation. cv2 stands in for PIL's antialiased
    bicubic (INTER_AREA when shrinking), so values differ slightly from the reference's.

    One image per forward pass by default (``batch_size=1``): CPU kernels may block a batch
    differently, and a frame's embedding must not depend on which frames it was batched with
    (rescore and replay must be bit-identical).
    """

    def __init__(
        self,
        model: str | Path = DINOV2_DEFAULT,
        device: str = "cpu",
        *,
        resize_shortest: int = 256,
        crop: int = 224,
        batch_size: int = 1,
    ) -> None:
        job = "DINOv2 embedding backend"
        self._torch, transformers = import_heavy(job)
        resolved = resolve_pretrained(model, job=job, default_repo=DINOV2_DEFAULT)
        self._net = load_pretrained(transformers.Dinov2Model, resolved, job=job, device=device)
        self.model = resolved.description
        self.name = f"dinov2-patchmean({model})"
        self.dim = int(self._net.config.hidden_size)
        self.calibration = SEED_CALIBRATION
        self._device = device
        self._resize_shortest = int(resize_shortest)
        self._crop = int(crop)
        self._batch_size = max(1, int(batch_size))

    def preprocess(self, image: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        """RGB uint8 image -> normalised float32 3×crop×crop (see the class docstring)."""
        rgb = as_rgb_uint8(image, self.name)
        h, w = rgb.shape[:2]
        s = self._resize_shortest
        nh, nw = (s, int(s * w / h)) if h <= w else (int(s * h / w), s)
        resized = resize_rgb(rgb, nh, nw)
        c = self._crop
        if nh < c or nw < c:
            raise ValueError(f"{self.name}: crop {c} is larger than the resized image {nh}×{nw}")
        top, left = int((nh - c) / 2.0), int((nw - c) / 2.0)
        return normalize_imagenet(resized[top : top + c, left : left + c])

    def embed(self, images: Sequence[npt.NDArray[np.uint8]]) -> Embeddings:
        torch = self._torch
        out = np.empty((len(images), self.dim), dtype=np.float32)
        for start in range(0, len(images), self._batch_size):
            chunk = images[start : start + self._batch_size]
            batch = np.stack([self.preprocess(im) for im in chunk])
            with torch.inference_mode():
                pixels = torch.from_numpy(batch).to(self._device)
                tokens = self._net(pixel_values=pixels).last_hidden_state[:, 1:]
                tokens = torch.nn.functional.normalize(tokens.float(), dim=-1)
                mean = torch.nn.functional.normalize(tokens.mean(dim=1), dim=-1)
            out[start : start + len(chunk)] = mean.cpu().numpy()
        return out


# --- registry -----------------------------------------------------------------------------

EMBEDDING_BACKENDS = backend_registry("embedding backend")
EMBEDDING_BACKENDS.register("cpu-colorhist-rbf", "streameval.perception.embedding:ColorHistRbf")
EMBEDDING_BACKENDS.register("dinov2-base", "streameval.perception.embedding:Dinov2PatchMean")
DEFAULT_EMBEDDING_BACKEND = "cpu-colorhist-rbf"


def create_embedding_backend(
    name: str = DEFAULT_EMBEDDING_BACKEND, **kwargs: Any
) -> EmbeddingBackend:
    """Build the embedding backend registered as ``name`` (``dinov2-base`` takes ``model`` and
    ``device``); heavy packages are imported only here, for the backend chosen."""
    backend: EmbeddingBackend = EMBEDDING_BACKENDS.create(name, **kwargs)
    return backend

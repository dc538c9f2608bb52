"""Depth networks for the motion-type fit (docs/methods.md#motion-type-fit: depth sent by the model,
a sidecar, *then* a
depth network).

Only a network backend lives here; there is no CPU default, because a depth map without a
network is not a depth map — the pipeline has its own depth-free estimator for that case and
records ``depth_source``.

**Depth-Anything outputs relative inverse depth (disparity), not depth.** Its relative models
are trained affine-invariant: the output is ``s · (1/Z) + t`` with unknown scale s > 0 *and*
unknown shift t. :class:`DepthAnything` returns ``Z' = d_max / d`` (``d`` the raw output,
``d_max`` its maximum over the frame), ``+inf`` where ``d ≤ 0`` (sky: infinitely far, as the
procedural world's depth), so that ``1/Z' = d / d_max`` is the network's disparity rescaled to
(0, 1] and the fit's clamp ``invZ = 1/max(Z, 1e-3)`` never bites. What this means for the fit
``u = a · invZ + b``: it is invariant to the *scale* of invZ (a absorbs it, and
``trans_amp = |a| · (P95 − P5)(invZ)`` is unchanged), but **not to the shift**: with
``invZ = k/Z + t`` the fit gives ``b' = b + a·t``, so a translation's parallax leaks into
``rot_amp = |b'|`` by ``|a·t|`` and p_trans is biased towards rotation by however far the
network's shift is from 0. Depth sent by the model or read from a sidecar has no such bias.
Metric checkpoints (``config.depth_estimation_type == "metric"``) output depth in metres and
are returned as is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from streameval.core.registry import backend_registry
from streameval.perception.hf import (
    as_rgb_uint8,
    import_heavy,
    load_pretrained,
    normalize_imagenet,
    resize_rgb,
    resolve_pretrained,
)

DepthMap = npt.NDArray[np.float32]  # (h, w) z-depth up to scale; +inf = infinitely far


class DepthBackend(Protocol):
    """Z-depth up to scale of one RGB uint8 H×W×3 frame, at the backend's own resolution
    (h, w) with the frame's aspect ratio; depth pixel (i, j) lies on image point
    ``((j + 0.5)·W/w − 0.5, (i + 0.5)·H/h − 0.5)`` (the cv2.resize convention)."""

    name: str

    def depth(self, image: npt.NDArray[np.uint8]) -> DepthMap: ...


DEPTH_ANYTHING_DEFAULT = "depth-anything/Depth-Anything-V2-Small-hf"


def _multiple_of(value: float, multiple: int) -> int:
    """DPT's ``constrain_to_multiple_of`` without bounds: Python's round (half to even)."""
    return int(round(value / multiple) * multiple)


def depth_anything_input_size(
    height: int, width: int, size: int = 518, multiple: int = 14
) -> tuple[int, int]:
    """The network input size of the reference DPT image processor (``keep_aspect_ratio``,
    ``ensure_multiple_of=14``, target ``size × size``): scale the side that needs the smaller
    change to ``size``, the other by the same factor, both rounded to a multiple of 14."""
    scale_h, scale_w = size / height, size / width
    if abs(1 - scale_w) < abs(1 - scale_h):
        scale_h = scale_w
    else:
        scale_w = scale_h
    return (
        max(multiple, _multiple_of(scale_h * height, multiple)),
        max(multiple, _multiple_of(scale_w * width, multiple)),
    )


def disparity_to_depth(disparity: npt.ArrayLike) -> DepthMap:
    """Relative inverse depth -> z-depth up to scale: ``d_max / d``, +inf where ``d ≤ 0`` or
    not finite (see the module docstring: the network's unknown shift is *not* removed)."""
    d = np.asarray(disparity, dtype=np.float64)
    finite = np.isfinite(d)
    d_max = float(d[finite].max()) if finite.any() else 0.0
    out = np.full(d.shape, np.inf, dtype=np.float64)
    if d_max > 0:
        near = finite & (d > 0)
        out[near] = d_max / d[near]
    return out.astype(np.float32)


class DepthAnything:
    """Depth-Anything (V1/V2) through ``transformers.DepthAnythingForDepthEstimation``.

    Weights from ``model``: a local directory or a hub id already in the Hugging Face cache,
    never downloaded; missing files raise BackendUnavailableError naming them. Preprocessing
    as the reference DPT image processor, with cv2/numpy: resize to
    :func:`depth_anything_input_size` (bicubic; INTER_AREA when shrinking), ImageNet
    normalisation, no padding. The output is returned at the network's output resolution (the
    input size, multiples of 14, aspect ratio kept) — the fit resizes the flow to the depth
    map, not the other way round.
    """

    def __init__(
        self, model: str | Path = DEPTH_ANYTHING_DEFAULT, device: str = "cpu", *, size: int = 518
    ) -> None:
        job = "Depth-Anything depth backend"
        self._torch, transformers = import_heavy(job)
        resolved = resolve_pretrained(model, job=job, default_repo=DEPTH_ANYTHING_DEFAULT)
        cls = transformers.DepthAnythingForDepthEstimation
        self._net = load_pretrained(cls, resolved, job=job, device=device)
        self.model = resolved.description
        self.name = f"depth-anything({model})"
        kind = getattr(self._net.config, "depth_estimation_type", "relative")
        self.metric = kind == "metric"
        self._device = device
        self._size = int(size)

    def preprocess(self, image: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        rgb = as_rgb_uint8(image, self.name)
        h, w = depth_anything_input_size(rgb.shape[0], rgb.shape[1], self._size)
        return normalize_imagenet(resize_rgb(rgb, h, w))

    def predict(self, image: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        """The network's raw output (relative disparity, or metres for metric checkpoints)."""
        torch = self._torch
        pixels = self.preprocess(image)
        with torch.inference_mode():
            batch = torch.from_numpy(pixels[np.newaxis]).to(self._device)
            out: Any = self._net(pixel_values=batch).predicted_depth
        raw: npt.NDArray[np.float32] = out[0].float().cpu().numpy()
        return raw

    def depth(self, image: npt.NDArray[np.uint8]) -> DepthMap:
        raw = self.predict(image)
        if self.metric:
            return np.where(np.isfinite(raw) & (raw > 0), raw, np.inf).astype(np.float32)
        return disparity_to_depth(raw)


DEPTH_BACKENDS = backend_registry("depth backend")
DEPTH_BACKENDS.register("depth-anything", "streameval.perception.depth:DepthAnything")


def create_depth_backend(name: str, **kwargs: Any) -> DepthBackend:
    """Build the depth backend registered as ``name`` (``depth-anything`` takes ``model``,
    ``device``, ``size``); torch/transformers are imported only here."""
    backend: DepthBackend = DEPTH_BACKENDS.create(name, **kwargs)
    return backend

"""CPU imaging statistics: sharpness, noise, exposure, clipping, colourfulness, flicker.

These are *not* Perceptual or Aesthetic Quality (docs/methods.md#imaging-statistics: only Q-Align
carries those names);
they are cheap, interpretable statistics reported under their own names, each chosen so that
it moves with its own defect and stays put under the others (measured on the procedural
world, ``tests/metrics/quality/test_imaging_defects.py``):

- **sharpness**: RMS of the 4-neighbour Laplacian with the noise's share removed
  (``var(L) − 20 σ̂²``: white noise of variance σ² adds exactly 20 σ² to the Laplacian's
  variance), divided by the mean luma. Dividing by the mean makes it indifferent to exposure
  (a gain scales both), removing the noise term keeps sensor noise from reading as detail.
- **noise**: σ̂ of the luma in grey levels (independent noise of σ per RGB channel is
  0.67 σ in luma, by the 0.299/0.587/0.114 weights): Immerkær's estimator (the
  Laplacian-difference mask, whose response to a plane is zero) averaged over the flattest
  90 % of pixels, as Tai & Yang's edge-gated variant: texture and edges are excluded, so a
  blur barely changes it.
- **exposure**: mean luma (0–255) of the frame; **clipping**: share of pixels at ≤ 2 or
  ≥ 253, where detail is lost.
- **colourfulness**: Hasler & Süsstrunk's M (opponent channels rg = R − G,
  yb = (R + G)/2 − B; ``σ_rgyb + 0.3 μ_rgyb``), on a 4× smaller frame so that pixel noise
  averages out. In absolute units as published, so it scales with exposure.
- **flicker** (episode level): mean relative second difference of the exposure series,
  ``|L_t − (L_{t−1} + L_{t+1})/2| / L_t``: an exposure ramp or a slow change of scene is
  nearly linear over three frames and cancels, a frame-to-frame flicker does not.

No library computes these without torch or a CUDA build (piq, pyiqa and torchvision all pull a
CUDA build of torch of several GB); the filters are OpenCV's. Per-frame cost is measured by
``bench/quality_cost.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.core.arrays import F64
from streameval.core.metric_result import MetricResult

STAT_FIELDS = ("sharpness", "noise", "exposure", "clipping", "colourfulness")
"""Columns of a per-frame statistics row, in order."""

NOISE_FLAT_SHARE = 0.90  # share of pixels, the flattest by Sobel magnitude, used for σ̂
CLIP_LOW, CLIP_HIGH = 2, 253  # grey levels at or beyond which a pixel counts as clipped
COLOUR_DOWNSCALE = 4  # colourfulness is measured on a frame this many times smaller
DETAIL_PER_SECOND = 4.0  # sharpness/noise/colourfulness measurements per second of video
LAPLACIAN_NOISE_GAIN = 20.0  # var of the 4-neighbour Laplacian of unit white noise: 16 + 4·1
_IMMERKAER = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], dtype=np.float32)
# E|N * n| for white noise of σ: σ·sqrt(36)·sqrt(2/π); Immerkær's normaliser
_IMMERKAER_SCALE = math.sqrt(math.pi / 2.0) / 6.0

STATISTIC_METRICS = (
    "imaging_sharpness",
    "imaging_noise",
    "imaging_exposure",
    "imaging_clipping",
    "imaging_colourfulness",
    "temporal_flicker",
)


def noise_sigma(gray: npt.NDArray[np.uint8]) -> float:
    """Immerkær's σ̂ (grey levels) over the flattest ``NOISE_FLAT_SHARE`` of the interior."""
    import cv2  # on use: the results layer and the kernels load without OpenCV

    response = cv2.filter2D(gray, cv2.CV_32F, _IMMERKAER)[1:-1, 1:-1]
    np.abs(response, out=response)
    gx = cv2.Sobel(gray, cv2.CV_16S, 1, 0, ksize=3)
    gy = cv2.Sobel(gray, cv2.CV_16S, 0, 1, ksize=3)
    # (|gx| + |gy|)/2 saturated to 8 bits: a histogram threshold instead of a sort (11 ms ->
    # 0.1 ms), then a masked mean (cv2.mean with a mask, no boolean-index copy)
    magnitude = cv2.addWeighted(cv2.convertScaleAbs(gx), 0.5, cv2.convertScaleAbs(gy), 0.5, 0)
    magnitude = np.ascontiguousarray(magnitude[1:-1, 1:-1])
    hist = cv2.calcHist([magnitude], [0], None, [256], [0, 256]).ravel()
    cumulative = np.cumsum(hist)
    threshold = int(np.searchsorted(cumulative, NOISE_FLAT_SHARE * cumulative[-1]))
    _, flat = cv2.threshold(magnitude, threshold, 255, cv2.THRESH_BINARY_INV)
    if not cv2.countNonZero(flat):
        return 0.0
    return float(_IMMERKAER_SCALE * cv2.mean(response, mask=flat)[0])


def sharpness(gray: npt.NDArray[np.uint8], sigma: float, mean_luma: float) -> float:
    """Contrast-normalised Laplacian RMS with the noise term removed (module docstring)."""
    import cv2  # on use: the results layer and the kernels load without OpenCV

    laplacian = cv2.Laplacian(gray, cv2.CV_32F, ksize=1)[1:-1, 1:-1]
    _, std = cv2.meanStdDev(laplacian)
    detail = float(std[0, 0]) ** 2 - LAPLACIAN_NOISE_GAIN * sigma * sigma
    return math.sqrt(max(detail, 0.0)) / max(mean_luma, 1.0)


def colourfulness(rgb: npt.NDArray[np.uint8]) -> float:
    """Hasler & Süsstrunk's M of an RGB uint8 image (no downscaling here)."""

    x = rgb.astype(np.float32)
    rg = x[..., 0] - x[..., 1]
    yb = 0.5 * (x[..., 0] + x[..., 1]) - x[..., 2]
    spread = math.sqrt(float(rg.var()) + float(yb.var()))
    centre = math.sqrt(float(rg.mean()) ** 2 + float(yb.mean()) ** 2)
    return spread + 0.3 * centre


def detail_stride(fps: float) -> int:
    """Frames between two measurements of sharpness, noise and colourfulness: about
    ``DETAIL_PER_SECOND`` per second of video. These change with the content, not from one
    frame to the next, and they are two thirds of the cost (bench/quality_cost.py); exposure
    and clipping, which flicker needs frame by frame, are measured on every frame."""
    return max(1, round(fps / DETAIL_PER_SECOND))


def frame_statistics(
    gray: npt.NDArray[np.uint8], rgb: npt.NDArray[np.uint8], *, detail: bool = True
) -> F64:
    """One row of ``STAT_FIELDS`` for a frame: ``gray`` is the analysis frame (640×432 grey,
    the resolution every model is compared at), ``rgb`` the frame's colour image. Without
    ``detail``, sharpness, noise and colourfulness are NaN (not measured on this frame)."""
    import cv2  # on use: the results layer and the kernels load without OpenCV

    mean_luma = float(cv2.mean(gray)[0])
    dark = int(np.count_nonzero(gray <= CLIP_LOW))
    bright = int(np.count_nonzero(gray >= CLIP_HIGH))
    clipped = (dark + bright) / gray.size
    if not detail:
        return np.array([math.nan, math.nan, mean_luma, clipped, math.nan], dtype=np.float64)
    sigma = noise_sigma(gray)
    # sized from the analysis frame, so that every model's colour is averaged over the same
    # share of its image whatever its native resolution
    h, w = gray.shape[:2]
    small_size = (max(1, w // COLOUR_DOWNSCALE), max(1, h // COLOUR_DOWNSCALE))
    small = cv2.resize(rgb, small_size, interpolation=cv2.INTER_AREA)
    return np.array(
        [
            sharpness(gray, sigma, mean_luma),
            sigma,
            mean_luma,
            clipped,
            colourfulness(np.asarray(small, dtype=np.uint8)),
        ],
        dtype=np.float64,
    )


def flicker_series(luma: F64) -> F64:
    """Relative second difference of the exposure series per interior frame (NaN where one
    of the three frames is missing)."""
    luma = np.asarray(luma, dtype=np.float64)
    if luma.size < 3:
        return np.zeros(0, dtype=np.float64)
    middle = luma[1:-1]
    second = np.abs(middle - 0.5 * (luma[:-2] + luma[2:]))
    out: F64 = second / np.maximum(middle, 1.0)
    return out


def _column(stats: F64, name: str) -> F64:
    column: F64 = stats[:, STAT_FIELDS.index(name)]
    return column[np.isfinite(column)]


def _stops(first: float, last: float) -> float | None:
    if first <= 0 or last <= 0:
        return None
    return math.log2(last / first)


def imaging_metrics(stats: F64 | None, fps: float) -> dict[str, MetricResult]:
    """Episode statistics from the per-frame rows (T × ``STAT_FIELDS``, NaN rows for frames
    not measured). Each is an official statistic in its own units (no normalised value:
    none of them is a master-table column); with no measured frame, missing."""
    if stats is None or stats.size == 0 or not np.isfinite(stats[:, 0]).any():
        reason = "no imaging statistics in the cache (no frame was measured)"
        return {name: MetricResult.missing(reason) for name in STATISTIC_METRICS}
    measured = int(np.count_nonzero(np.isfinite(stats[:, STAT_FIELDS.index("exposure")])))
    out: dict[str, MetricResult] = {}
    sharp = _column(stats, "sharpness")
    out["imaging_sharpness"] = MetricResult.statistic(
        float(sharp.mean()), "Laplacian RMS / mean luma", {"median": float(np.median(sharp))}
    )
    noise = _column(stats, "noise")
    out["imaging_noise"] = MetricResult.statistic(
        float(np.median(noise)), "grey levels (σ)", {"p95": float(np.percentile(noise, 95))}
    )
    luma = _column(stats, "exposure")
    window = max(1, round(fps))  # one second of frames at each end
    first, last = float(luma[:window].mean()), float(luma[-window:].mean())
    exposure_details: dict[str, Any] = {
        "first_second": first,
        "last_second": last,
        "stops_first_to_last": _stops(first, last),
        "p5": float(np.percentile(luma, 5)),
        "p95": float(np.percentile(luma, 95)),
    }
    out["imaging_exposure"] = MetricResult.statistic(
        float(luma.mean()), "mean luma (0-255)", exposure_details
    )
    clipped = _column(stats, "clipping")
    out["imaging_clipping"] = MetricResult.statistic(
        float(clipped.mean()), "share of pixels", {"max": float(clipped.max())}
    )
    colour = _column(stats, "colourfulness")
    out["imaging_colourfulness"] = MetricResult.statistic(
        float(colour.mean()), "Hasler-Süsstrunk M", {}
    )
    flicker = flicker_series(stats[:, STAT_FIELDS.index("exposure")])
    flicker = flicker[np.isfinite(flicker)]
    if flicker.size == 0:
        out["temporal_flicker"] = MetricResult.not_applicable(
            "fewer than 3 consecutive measured frames"
        )
    else:
        out["temporal_flicker"] = MetricResult.statistic(
            float(100.0 * flicker.mean()),
            "% of mean luma",
            {"p95": float(100.0 * np.percentile(flicker, 95))},
        )
    for result in out.values():
        result.details["frames"] = measured
    return out

"""Imaging statistic kernels against naive references and synthetic frames of known truth."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from streameval.metrics.quality.imaging import (
    STAT_FIELDS,
    colourfulness,
    flicker_series,
    frame_statistics,
    imaging_metrics,
    noise_sigma,
    sharpness,
)


def smooth_scene(seed: int = 0, height: int = 432, width: int = 640) -> np.ndarray:
    """Large smooth colour blobs: almost no Laplacian energy, a known noise-free base."""
    rng = np.random.default_rng(seed)
    base = rng.integers(40, 220, (6, 9, 3), dtype=np.uint8)
    return np.asarray(cv2.resize(base, (width, height), interpolation=cv2.INTER_CUBIC))


def with_noise(image: np.ndarray, sigma: float, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    noisy = image.astype(np.float64) + rng.normal(0, sigma, image.shape)
    return np.clip(np.rint(noisy), 0, 255).astype(np.uint8)


def naive_colourfulness(rgb: np.ndarray) -> float:
    r, g, b = (rgb[..., c].astype(np.float64).ravel() for c in range(3))
    rg = r - g
    yb = (r + g) / 2 - b
    return math.sqrt(rg.var() + yb.var()) + 0.3 * math.sqrt(rg.mean() ** 2 + yb.mean() ** 2)


def test_noise_sigma_recovers_known_noise() -> None:
    gray = cv2.cvtColor(smooth_scene(), cv2.COLOR_RGB2GRAY)
    assert noise_sigma(gray) < 0.5
    for sigma in (2.0, 5.0, 12.0):
        estimate = noise_sigma(with_noise(gray, sigma))
        assert estimate == pytest.approx(sigma, rel=0.08), (sigma, estimate)


def test_noise_sigma_matches_a_naive_immerkaer_on_a_flat_image() -> None:
    """On a flat (zero-gradient) base every pixel is 'flat': the kernel equals the textbook
    sum over the interior, sqrt(pi/2)/(6 (W-2)(H-2)) * sum |I * N|."""
    rng = np.random.default_rng(5)
    image = np.clip(128 + rng.normal(0, 3, (40, 50)), 0, 255).astype(np.uint8)
    f = image.astype(np.float64)
    total = 0.0
    for y in range(1, 39):
        for x in range(1, 49):
            w = f[y - 1 : y + 2, x - 1 : x + 2]
            total += abs(
                w[0, 0]
                - 2 * w[0, 1]
                + w[0, 2]
                - 2 * w[1, 0]
                + 4 * w[1, 1]
                - 2 * w[1, 2]
                + w[2, 0]
                - 2 * w[2, 1]
                + w[2, 2]
            )
    naive = math.sqrt(math.pi / 2) / (6 * 38 * 48) * total
    # the 90 % gate drops the noisiest tenth even here, so the kernel reads a little lower
    assert noise_sigma(image) == pytest.approx(naive, rel=0.15)
    assert noise_sigma(image) <= naive


def test_sharpness_is_zero_on_flat_and_ignores_gain_and_noise() -> None:
    flat = np.full((100, 120), 90, np.uint8)
    assert sharpness(flat, 0.0, 90.0) == 0.0
    rng = np.random.default_rng(2)
    checker = np.kron(rng.integers(0, 2, (25, 30)), np.ones((4, 4))) * 100 + 60
    gray = checker.astype(np.uint8)
    mean = float(gray.mean())
    base = sharpness(gray, noise_sigma(gray), mean)
    lap = cv2.Laplacian(gray.astype(np.float64), cv2.CV_64F, ksize=1)[1:-1, 1:-1]
    # with no noise term the kernel is the plain Laplacian RMS over the mean luma
    assert sharpness(gray, 0.0, mean) == pytest.approx(lap.std() / mean, rel=1e-5)
    assert base == pytest.approx(lap.std() / mean, rel=0.02)  # σ̂ of a clean image is small
    darker = (gray.astype(np.float64) * 0.5).round().astype(np.uint8)
    assert sharpness(darker, noise_sigma(darker), float(darker.mean())) == pytest.approx(
        base, rel=0.02
    )
    noisy = with_noise(gray, 6.0)
    assert sharpness(noisy, noise_sigma(noisy), float(noisy.mean())) == pytest.approx(
        base, rel=0.05
    )
    blurred = cv2.GaussianBlur(gray, (0, 0), 2.0)
    assert sharpness(blurred, noise_sigma(blurred), float(blurred.mean())) < 0.4 * base


def test_colourfulness_matches_the_formula() -> None:
    image = smooth_scene(3, 60, 80)
    assert colourfulness(image) == pytest.approx(naive_colourfulness(image), rel=1e-5)
    grey = np.repeat(np.full((30, 40, 1), 100, np.uint8), 3, axis=2)
    assert colourfulness(grey) == 0.0


def test_frame_statistics_row() -> None:
    rgb = smooth_scene()
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    row = frame_statistics(gray, rgb)
    assert row.shape == (len(STAT_FIELDS),) and np.isfinite(row).all()
    assert row[STAT_FIELDS.index("exposure")] == pytest.approx(gray.mean())
    assert row[STAT_FIELDS.index("clipping")] == 0.0
    light = frame_statistics(gray, rgb, detail=False)
    assert np.isnan(light[[0, 1, 4]]).all() and light[2] == row[2] and light[3] == row[3]
    clipped = gray.copy()
    clipped[:10] = 255
    clipped[10:20] = 0
    assert frame_statistics(clipped, rgb)[3] == pytest.approx(20 * 640 / gray.size)


def test_flicker_series_cancels_ramps_and_catches_alternation() -> None:
    ramp = np.linspace(50, 200, 40)
    assert np.allclose(flicker_series(ramp), 0.0)
    alternating = 100 + 10 * (-1.0) ** np.arange(40)
    series = flicker_series(alternating)
    naive = [
        abs(alternating[t] - (alternating[t - 1] + alternating[t + 1]) / 2) / alternating[t]
        for t in range(1, 39)
    ]
    assert np.allclose(series, naive)
    assert flicker_series(np.array([1.0, 2.0])).size == 0


def test_imaging_metrics_statuses() -> None:
    assert all(m.status == "missing" for m in imaging_metrics(None, 16.0).values())
    stats = np.full((2, len(STAT_FIELDS)), np.nan)
    stats[:, :] = [0.1, 1.0, 100.0, 0.0, 30.0]
    out = imaging_metrics(stats, 16.0)
    assert out["temporal_flicker"].status == "not_applicable"
    assert out["imaging_exposure"].status == "official"
    assert out["imaging_exposure"].normalized is None  # a statistic, not a table column
    assert out["imaging_exposure"].details["unit"] == "mean luma (0-255)"

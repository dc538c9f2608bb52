"""The report's figures, drawn with matplotlib and returned as PNG bytes.

Every figure reads only ``EpisodeData`` (scores.json details + cache signals), so what is
drawn is what was scored: segment windows, latencies, Motion Stability's dips (the same
smoothing and 0.4·g threshold as the kernel), Local Memory's sampled pairs, Revisit pairs.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from streameval.constants import STABILITY_LOW, STABILITY_SMOOTH_S
from streameval.core.arrays import F64, Image
from streameval.protocol.keys import KEYS, channel_of, expected_sign
from streameval.report.data import EpisodeData

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# One colour per key, shared by the shading and the legend (colour-blind-safe Okabe–Ito).
KEY_COLOURS = {
    "W": "#0072B2",
    "S": "#56B4E9",
    "A": "#009E73",
    "D": "#F0E442",
    "L": "#E69F00",
    "R": "#CC79A7",
}
_CONTROL_FOR_SEGMENTS = ("motion_stability_trans", "motion_stability_rot")
_LATENCY = ("response_latency_trans", "response_latency_rot")


def _figure(width: float, height: float) -> Figure:
    import matplotlib

    matplotlib.use("Agg", force=True)  # never a GUI backend: reports are written headless
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def to_png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def key_runs(keys: Sequence[str]) -> list[tuple[str, int, int]]:
    """(key, first frame, end frame) of each run of equal keys."""
    runs: list[tuple[str, int, int]] = []
    start = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[start]:
            runs.append((keys[start], start, i))
            start = i
    return runs


def _shade_segments(ax: Axes, keys: Sequence[str], fps: float, label: bool) -> None:
    for key, start, end in key_runs(keys):
        if key not in KEYS:
            continue
        ax.axvspan(start / fps, end / fps, color=KEY_COLOURS[key], alpha=0.15, lw=0)
        if label:
            sign = "+" if expected_sign(key) > 0 else "−"
            ax.text(
                (start + end) / 2 / fps,
                1.0,
                f"{key}: {channel_of(key)} {sign}",
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="bottom",
                fontsize=8,
            )


def _per_sample_average(v: F64, k: int) -> F64:
    """The kernel's centred, zero-padded k-sample mean (``moving_average``), one value per
    sample. ``moving_average`` returns ``max(len, k)`` values, as the reference scans them: a
    window shorter than k (a short scored segment at a higher fps) has more smoothed values
    than samples, and a dip must be placed on a sample."""
    full = np.convolve(v, np.ones(k) / k, mode="full")
    return full[(k - 1) // 2 : (k - 1) // 2 + v.size]


def stability_dips(data: EpisodeData) -> list[tuple[float, float, str]]:
    """(time s, signal, channel) of samples whose smoothed response is below ``0.4·g`` in a scored
    Motion Stability window — where the kernel counts lost sustain and hiccups."""
    points: list[tuple[float, float, str]] = []
    k = max(1, int(STABILITY_SMOOTH_S * data.fps))
    for name in _CONTROL_FOR_SEGMENTS:
        for seg in data.details(name).get("segments", []):
            g, key = seg.get("g"), seg.get("key")
            lo, hi = seg.get("window_start"), seg.get("window_end")
            if seg.get("status") != "scored" or g is None or key not in KEYS:
                continue
            channel = channel_of(key)
            signal = data.sx if channel == "sx" else data.srad
            if signal is None or lo is None or hi is None:
                continue
            idx = np.arange(int(lo), min(int(hi), signal.size))
            v = expected_sign(key) * signal[idx]
            ok = np.isfinite(v)
            if ok.sum() == 0:
                continue
            vs = _per_sample_average(v[ok], k)
            for i, smoothed in zip(idx[ok], vs, strict=True):
                if smoothed < STABILITY_LOW * float(g):
                    points.append((float(i) / data.fps, float(signal[i]), channel))
    return points


def latency_markers(data: EpisodeData) -> list[tuple[float, float | None, str]]:
    """(switch time s, response time s or None when never reached, key) per scored switch."""
    markers: list[tuple[float, float | None, str]] = []
    for name in _LATENCY:
        for seg in data.details(name).get("segments", []):
            t0 = seg.get("t0_s")
            if t0 is None:
                continue
            latency = seg.get("latency_s") if seg.get("reached") else None
            markers.append((float(t0), None if latency is None else float(latency), seg["key"]))
    return sorted(markers)


def signals_figure(data: EpisodeData) -> bytes | None:
    """Sx and Srad over time, segments shaded with each key's expected sign, latency markers
    at switches, stability dips; None without a cache."""
    if data.sx is None or data.srad is None:
        return None
    fig = _figure(10, 5.2)
    axes = fig.subplots(2, 1, sharex=True)
    t = np.arange(data.sx.size) / data.fps
    dips = stability_dips(data)
    markers = latency_markers(data)
    rows = zip(axes, ("sx", "srad"), (data.sx, data.srad), strict=True)
    for row, (ax, name, values) in enumerate(rows):
        _shade_segments(ax, data.frame_keys, data.fps, label=row == 0)
        ax.plot(t, values, color="black", lw=1.0, label=name)
        ax.axhline(0, color="grey", lw=0.6)
        ax.set_ylabel(f"{'Sx' if name == 'sx' else 'Srad'} (flow px)")
        mine = [(ts, v) for ts, v, channel in dips if channel == name]
        if mine:
            ax.scatter(
                *zip(*mine, strict=True),
                s=9,
                color="#D55E00",
                zorder=3,
                label="stability dip (< 0.4·g)",
            )
        for t0, latency, _key in markers:
            ax.axvline(t0, color="#444444", lw=0.8, ls="--")
            if latency is not None:
                ax.axvline(t0 + latency, color="#D55E00", lw=1.2, ls=":")
        ax.legend(loc="upper right", fontsize=8)
    if markers:
        axes[1].plot([], [], color="#444444", ls="--", label="key switch")
        axes[1].plot([], [], color="#D55E00", ls=":", label="response reached")
        axes[1].legend(loc="upper right", fontsize=8)
    axes[1].set_xlabel("time (s)")
    fig.suptitle("Motion signals per segment (expected sign above each segment)")
    return to_png(fig)


def local_memory_figure(data: EpisodeData, thumbs: dict[int, Image]) -> bytes | None:
    """Sampled frames in order, each pair's distance against τ, flagged pairs in red."""
    d = data.details("local_memory")
    frames: list[int] = [int(f) for f in d.get("sampled_frames", [])]
    pairs = [tuple(p) for p in d.get("pairs", [])]
    distances: list[float] = d.get("pair_distances", [])
    if not frames or not pairs:
        return None
    flagged = {tuple(p) for p in d.get("flagged_pairs", [])}
    shown = [f for f in frames if f in thumbs][:16]
    fig = _figure(10, 3.8 if shown else 2.8)
    ratios = [1.0, 2.2] if shown else [1.0]
    grid = fig.add_gridspec(len(ratios), max(1, len(shown)), height_ratios=ratios)
    if shown:
        for col, frame in enumerate(shown):
            ax = fig.add_subplot(grid[0, col])
            ax.imshow(thumbs[frame])
            ax.set_axis_off()
            bad = any(frame in p for p in flagged)
            ax.set_title(f"{frame}", fontsize=7, color="#D55E00" if bad else "black")
    ax = fig.add_subplot(grid[-1, :])
    colours = ["#D55E00" if tuple(p) in flagged else "#0072B2" for p in pairs]
    ax.bar([f"{p[0]}→{p[1]}" for p in pairs], distances, color=colours)
    tau = d.get("tau_mut")
    if isinstance(tau, int | float):
        ax.axhline(float(tau), color="#D55E00", ls="--", lw=1, label=f"τ_mut = {tau:g}")
        ax.legend(fontsize=8)
    ax.tick_params(axis="x", labelsize=6, rotation=90)
    ax.set_ylabel("appearance distance")
    fig.suptitle(f"Local Memory: sampled frames, {len(flagged)} flagged pair(s) in red")
    return to_png(fig)


def revisit_pairs(data: EpisodeData) -> list[dict[str, Any]]:
    """The kept equal-arc pairs of every paired reversal, with its label."""
    out: list[dict[str, Any]] = []
    for rev in data.details("revisit_memory").get("reversals", []):
        keys = str(rev.get("keys", ""))
        label = "→".join(keys) if len(keys) == 2 else keys
        dists = rev.get("dists") or []
        for n, pair in enumerate(rev.get("pairs", [])):
            # the kernel's details hold pairs as [i, j] with their distances in ``dists``
            i, j = int(pair[0]), int(pair[1])
            d = float(dists[n]) if n < len(dists) and dists[n] is not None else float("nan")
            out.append({"i": i, "j": j, "d": d, "reversal": label})
    return out


def revisit_figure(data: EpisodeData, thumbs: dict[int, Image], limit: int = 6) -> bytes | None:
    """Revisit pairs as thumbnails: outbound frame i over return frame j, distance d."""
    pairs = [p for p in revisit_pairs(data) if p["i"] in thumbs and p["j"] in thumbs][:limit]
    if not pairs:
        return None
    fig = _figure(1.7 * len(pairs) + 0.6, 3.4)
    axes = np.atleast_2d(fig.subplots(2, len(pairs)))
    if axes.shape[0] != 2:
        axes = axes.T
    for col, pair in enumerate(pairs):
        top, bottom = axes[0][col], axes[1][col]
        top.imshow(thumbs[pair["i"]])
        bottom.imshow(thumbs[pair["j"]])
        top.set_title(f"{pair['reversal']} i={pair['i']}", fontsize=7)
        bottom.set_title(f"j={pair['j']}  d={pair['d']:.3f}", fontsize=7)
        top.set_axis_off()
        bottom.set_axis_off()
    fig.suptitle("Revisit Memory: outbound (top) vs return (bottom) at equal arc")
    return to_png(fig)


def index_figure(
    models: Sequence[str], columns: Sequence[tuple[str, list[float | None], float]]
) -> bytes:
    """One small bar chart per column: each model's value (missing values left empty), on
    the column's own scale (0–100 for WorldMark, 0–1 for WorldAtlas)."""
    n = max(1, len(columns))
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig = _figure(3.0 * cols, 2.0 * rows + 0.6)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    y = np.arange(len(models))
    for ax, (label, values, scale) in zip(axes, columns, strict=False):
        heights = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        ax.barh(y, np.nan_to_num(heights, nan=0.0), color="#0072B2")
        ax.set_xlim(0, scale)
        ax.set_yticks(y, [m if len(m) <= 30 else m[:29] + "…" for m in models], fontsize=7)
        ax.invert_yaxis()
        ax.set_title(label, fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
    for ax in axes[len(columns) :]:
        ax.set_axis_off()
    fig.suptitle("Master table columns per model (each on its scale, higher is better)")
    return to_png(fig)


def frames_wanted(data: EpisodeData) -> set[int]:
    """The frames any thumbnail of the report needs."""
    wanted = {int(f) for f in data.details("local_memory").get("sampled_frames", [])[:16]}
    for pair in revisit_pairs(data)[:6]:
        wanted.update((int(pair["i"]), int(pair["j"])))
    return wanted

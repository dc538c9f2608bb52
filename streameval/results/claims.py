"""A claim (``inputs.claims.Claim``) against what a run measured, with neutral verdicts:
``consistent``, ``below claim``, ``different configuration``, ``config not stated`` — and
``not measured`` where the run could not measure what the claim states (docs/methods.md#claims).

Never "reproduced": a run measures one configuration at one time; it can agree with a claim or
fall short of it, not confirm a vendor's setup. The order of the overall verdict is the order
a reader needs: a different configuration first (the numbers are not comparable at all), then a
claim that leaves its configuration out (they may not be), then the rate.

The measured rate is the native frame rate of the run's ``scores.json`` ``runtime`` objects
(frames the model generated, repeats and interpolations not counted); a run whose scores carry
none has its rate ``not measured``, never the raw delivered rate, which a frame-doubling server
inflates.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streameval.inputs.claims import Claim
from streameval.inputs.jsonfile import read_json_object_if_any

CONSISTENT = "consistent"
BELOW = "below claim"
DIFFERENT = "different configuration"
NOT_STATED = "config not stated"
NOT_MEASURED = "not measured"
VERDICTS = (CONSISTENT, BELOW, DIFFERENT, NOT_STATED, NOT_MEASURED)
# a measured native rate this close under the claimed one is consistent with it: a claim is
# quoted in whole frames a second, and a run's median native rate carries timing noise
FPS_TOLERANCE = 0.05


@dataclass(frozen=True, slots=True)
class Measured:
    """What a run measured that a claim can state: the native fps (median over episodes),
    the frames' resolution, and the GPUs NVML saw (None: not measured, with the reasons)."""

    fps: float | None = None
    width: int | None = None
    height: int | None = None
    gpus: tuple[str, ...] | None = None
    fps_reason: str = "no runtime object (native frames) in scores.json"
    gpu_reason: str = "no GPU measured"


def measured_from_run(episodes: Iterable[Path], hardware: Mapping[str, Any] | None) -> Measured:
    """``Measured`` from a run's episode folders (their ``scores.json`` ``runtime`` object and
    ``cache/episode.json``) and its ledger's ``hardware`` block."""
    rates: list[float] = []
    sizes: list[tuple[int, int]] = []
    for folder in episodes:
        runtime = read_json_object_if_any(folder / "scores.json").get("runtime")
        if isinstance(runtime, dict):
            value = runtime.get("native_fps")
            if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
                rates.append(float(value))
        meta = read_json_object_if_any(folder / "cache" / "episode.json")
        if isinstance(meta.get("width"), int) and isinstance(meta.get("height"), int):
            sizes.append((meta["width"], meta["height"]))
    width, height = max(set(sizes), key=sizes.count) if sizes else (None, None)
    gpu = (hardware or {}).get("gpu") or {}
    gpus = (
        tuple(str(d.get("name")) for d in gpu.get("devices", [])) if gpu.get("measured") else None
    )
    return Measured(
        fps=statistics.median(rates) if rates else None,
        width=width,
        height=height,
        gpus=gpus,
        gpu_reason=str(gpu.get("reason") or "no GPU measured"),
    )


def _name_tokens(name: str) -> set[str]:
    return {t for t in name.lower().replace("-", " ").split() if t not in {"nvidia", "geforce"}}


def gpu_matches(claimed: str, measured: str) -> bool:
    """``H100`` matches ``NVIDIA H100 80GB HBM3``: every word of the claimed name is a word
    of the device's name (case and an ``NVIDIA`` prefix aside)."""
    return _name_tokens(claimed) <= _name_tokens(measured)


def _field(name: str, claimed: str, measured: str, verdict: str) -> dict[str, str]:
    return {"field": name, "claimed": claimed, "measured": measured, "verdict": verdict}


def _fps_field(claim: Claim, measured: Measured) -> dict[str, str]:
    if claim.fps is None:
        return _field("fps", "not stated", _fps_text(measured), NOT_STATED)
    if measured.fps is None:
        return _field("fps", f"{claim.fps:g}", f"not measured: {measured.fps_reason}", NOT_MEASURED)
    ok = measured.fps >= claim.fps * (1 - FPS_TOLERANCE)
    return _field("fps", f"{claim.fps:g}", _fps_text(measured), CONSISTENT if ok else BELOW)


def _fps_text(measured: Measured) -> str:
    return "not measured" if measured.fps is None else f"{measured.fps:.2f} (native)"


def _resolution_field(claim: Claim, measured: Measured) -> dict[str, str]:
    shown = "not measured" if measured.height is None else f"{measured.width}×{measured.height}"
    if claim.height is None:
        return _field("resolution", "not stated", shown, NOT_STATED)
    claimed = f"{claim.width}×{claim.height}" if claim.width else f"{claim.height}p"
    if measured.height is None:
        return _field("resolution", claimed, shown, NOT_MEASURED)
    same = measured.height == claim.height and (
        claim.width is None or measured.width == claim.width
    )
    return _field("resolution", claimed, shown, CONSISTENT if same else DIFFERENT)


def _gpu_field(claim: Claim, measured: Measured) -> dict[str, str]:
    reason = measured.gpu_reason
    shown = (
        (reason if reason.startswith(NOT_MEASURED) else f"{NOT_MEASURED}: {reason}")
        if measured.gpus is None
        else f"{len(measured.gpus)}× {', '.join(sorted(set(measured.gpus)))}"
    )
    if claim.gpu_name is None:
        return _field("gpu", "not stated", shown, NOT_STATED)
    claimed = f"{claim.gpu_count or 1}× {claim.gpu_name}"
    if measured.gpus is None:
        return _field("gpu", claimed, shown, NOT_MEASURED)
    same = len(measured.gpus) == (claim.gpu_count or 1) and all(
        gpu_matches(claim.gpu_name, g) for g in measured.gpus
    )
    return _field("gpu", claimed, shown, CONSISTENT if same else DIFFERENT)


def claim_verdict(claim: Claim, measured: Measured) -> dict[str, Any]:
    """The claim, each part's verdict, and the overall one (the ledger's ``claim`` block)."""
    fields = [
        _fps_field(claim, measured),
        _gpu_field(claim, measured),
        _resolution_field(claim, measured),
    ]
    by_name = {f["field"]: f["verdict"] for f in fields}
    config = (by_name["gpu"], by_name["resolution"])
    if DIFFERENT in config:
        overall = DIFFERENT
    elif NOT_STATED in config:
        overall = NOT_STATED
    elif by_name["fps"] in (NOT_MEASURED, NOT_STATED):
        overall = NOT_MEASURED if by_name["fps"] == NOT_MEASURED else NOT_STATED
    else:
        overall = by_name["fps"]
    return {"claim": claim.to_json(), "verdict": overall, "fields": fields}


def verdict_line(block: Mapping[str, Any]) -> str:
    """``claim "25 fps, 1x H100, 720p": below claim (fps 25 → 16.02 (native) below claim; ...)``."""
    parts = [
        f"{f['field']} {f['claimed']} → {f['measured']}: {f['verdict']}" for f in block["fields"]
    ]
    return f"claim {block['claim']['text']!r}: {block['verdict']} ({'; '.join(parts)})"

"""The still-segment floor applied to the reference's control outputs
(docs/methods.md#still-control-segments-score-zero).

The reference scores a segment whose motion is below the still-video floor like any other
(codec noise has a sign); streameval scores its direction accuracy and purity 0. Some generated
golden cases contain such segments (a still key, signals scaled to 1e-6), so the expectation is
the reference's output with that one departure applied: those segments' ``dir_gated`` and
``purity`` become 0, and the case and group columns that pool them are recomputed from the
per-segment values exactly as the reference pools them (mean over segments, accuracy clipped at
0). Everything else is the reference's number unchanged.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from streameval.protocol.suites import worldmark_keys

from streameval.constants import MOTION_FLOOR_PX
from streameval.metrics.segments import equal_split_spans
from tests.parity.golden import packed

_POOL_OF = {"fwd": "t", "lat": "t", "yaw": "r"}


def still_segments(npz: dict[str, np.ndarray], k: int) -> set[int]:
    """Segments of case k whose stable-zone mean flow magnitude is below the floor."""
    sx = packed(npz["Sx"], npz["offsets"], k)
    srad = packed(npz["Srad"], npz["offsets"], k)
    keys = worldmark_keys(int(npz["action_id"][k]))
    out: set[int] = set()
    for span in equal_split_spans(keys, sx.size, float(npz["fps"][k])):
        idx = np.arange(span.stable.start, span.stable.stop)
        idx = idx[np.isfinite(sx[idx]) & np.isfinite(srad[idx])]
        if idx.size and float(np.mean(np.hypot(sx[idx], srad[idx]))) < MOTION_FLOOR_PX:
            out.add(span.index)
    return out


def _pooled(segments: list[dict[str, Any]]) -> dict[str, float | None]:
    """DA/MP columns of a list of golden segments, as the reference pools them."""
    cols: dict[str, float | None] = {}
    for pool in ("t", "r"):
        mine = [s for s in segments if _POOL_OF[s["family"]] == pool and not s["M1"].get("na")]
        if not mine:
            cols[f"DA_{pool}"] = cols[f"MP_{pool}"] = None
            continue
        da = float(np.mean([s["M1"]["dir_gated"] for s in mine]))
        cols[f"DA_{pool}"] = 100.0 * max(0.0, da)
        cols[f"MP_{pool}"] = 100.0 * float(np.mean([s["M2"]["purity"] for s in mine]))
    return cols


def with_still_floor(
    doc: dict[str, Any], npz: dict[str, np.ndarray], floor: bool = True
) -> dict[str, Any]:
    """A copy of the golden ``control`` document with the floor applied (module docstring).

    ``floor=False`` only recomputes the DA/MP columns from the per-segment values: the test
    that this pooling reproduces the reference's own columns.
    """
    out = copy.deepcopy(doc)
    for k, case in enumerate(out["cases"]):
        still = still_segments(npz, k) if floor else set()
        for seg in case["segments"]:
            if seg["seg"] in still and not seg["M1"].get("na"):
                seg["M1"]["dir_gated"] = 0.0
                seg["M2"]["purity"] = 0.0
                seg["no_motion"] = True
        if still or not floor:
            for col, value in _pooled(case["segments"]).items():
                if col in case["columns"]:
                    case["columns"][col] = value
    for group in out["groups"]:
        segs = [s for k in group["cases"] for s in out["cases"][k]["segments"]]
        for col, value in _pooled(segs).items():
            if col in group["columns"]:
                group["columns"][col] = value
    return out

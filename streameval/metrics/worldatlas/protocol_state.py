"""Seed 004's sample-local protocol state: which frames anchor- and motion-type metrics read.

segment_random (official) draws one frame per equal segment from a hash of the sample key, so
prediction and reference are read on aligned time support and reruns are reproducible;
anchor_compat (legacy) reads fixed fractions of the rollout.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from streameval.metrics.worldatlas.constants import ANCHOR_POSITIONS, PROTOCOL_SEED, SEGMENT_COUNT

Protocol = Literal["segment_random", "anchor_compat"]


def segment_offset(sample_key: str, segment: int, seed: int = PROTOCOL_SEED) -> float:
    """The position in [0, 1) of segment ``segment``'s frame (SPEC §7)."""
    digest = hashlib.sha256(f"{sample_key}:{seed}:{segment}".encode()).hexdigest()
    return int(digest[:8], 16) / 2**32


def segment_random_indices(
    sample_key: str, length: int, *, segment_count: int = SEGMENT_COUNT, seed: int = PROTOCOL_SEED
) -> list[int]:
    """One frame per segment of ``segment_count`` equal segments of ``length`` frames."""
    if length <= 0:
        return []
    indices = []
    for segment in range(segment_count):
        start = segment * length / segment_count
        end = (segment + 1) * length / segment_count
        frame = int(start + segment_offset(sample_key, segment, seed) * (end - start))
        indices.append(min(max(frame, 0), length - 1))
    return indices


def anchor_compat_indices(
    length: int, positions: tuple[float, ...] = ANCHOR_POSITIONS
) -> list[int]:
    """round(p * (L - 1)) for the anchor positions (Python rounding, half to even)."""
    return [round(p * (length - 1)) for p in positions] if length > 0 else []


def protocol_indices(protocol: Protocol, sample_key: str, length: int) -> list[int]:
    if protocol == "segment_random":
        return segment_random_indices(sample_key, length)
    return anchor_compat_indices(length)

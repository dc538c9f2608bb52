"""Same-seed identity: are K rollouts of one case, driven alike, the same video — and if not,
how far apart (per-frame PSNR against the first)?

Determinism is what a lab is asked first about a world model's rollouts: a model that answers
the same keys from the same start with the same frames can be replayed, debugged and compared;
one that does not should say by how much. Recordings are compared frame by frame as decoded
(a lossless recording decodes to exactly the frames the model sent).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any

import numpy as np

from streameval.core.arrays import Image
from streameval.errors import BadInputError, InvalidDataError


def frame_psnr(a: Image, b: Image) -> float:
    """PSNR in dB of two uint8 frames of one shape: ``inf`` when identical (peak 255)."""
    if a.shape != b.shape:
        raise ValueError(f"frames of shapes {a.shape} and {b.shape}")
    diff = a.astype(np.float64) - b.astype(np.float64)
    mse = float(np.mean(diff * diff))
    return math.inf if mse == 0.0 else 10.0 * math.log10(255.0**2 / mse)


@dataclass(frozen=True, slots=True)
class RolloutIdentity:
    """K rollouts of one episode against the first: ``identical`` when every frame of every
    rollout equals the first's and the counts agree; else the frames that differ and the PSNR
    (dB) of the differing ones (``psnr_min``: the worst frame; ``psnr_median``). ``frames``:
    each rollout's frame count. ``reason``: why they could not be compared (no recording)."""

    episode: str
    rollouts: int
    frames: tuple[int, ...]
    identical: bool | None
    differing_frames: int = 0
    psnr_min: float | None = None
    psnr_median: float | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "episode": self.episode,
            "rollouts": self.rollouts,
            "frames": list(self.frames),
            "identical": self.identical,
            "differing_frames": self.differing_frames,
            "psnr_db_min": self.psnr_min,
            "psnr_db_median": self.psnr_median,
            "reason": self.reason,
        }

    def line(self) -> str:
        if self.identical is None:
            return f"{self.episode}: {self.rollouts} rollouts not compared ({self.reason})"
        if self.identical:
            return (
                f"{self.episode}: {self.rollouts} rollouts identical ({self.frames[0]} frames each)"
            )
        counts = "" if len(set(self.frames)) == 1 else f", frame counts {list(self.frames)}"
        psnr = "n/a" if self.psnr_min is None else f"{self.psnr_min:.2f} dB"
        median = "n/a" if self.psnr_median is None else f"{self.psnr_median:.2f} dB"
        return (
            f"{self.episode}: {self.rollouts} rollouts NOT identical: {self.differing_frames} "
            f"frame(s) differ, PSNR min {psnr}, median {median}{counts}"
        )


def _frames(recording: Path) -> Iterator[Image]:
    from streameval.replay.rollout import read_rollout_dir

    yield from read_rollout_dir(recording).frames.read()


def compare_rollouts(episode: str, recordings: Sequence[Path]) -> RolloutIdentity:
    """Compare each recording (``recording/`` folders) with the first, frame by frame."""
    missing = [r for r in recordings if not r.is_dir()]
    if missing:
        return RolloutIdentity(
            episode, len(recordings), (), None, reason=f"no recording at {missing[0]}"
        )
    counts = [0] * len(recordings)
    psnrs: list[float] = []
    differing = 0
    try:  # all rollouts decoded side by side: one frame of each in memory, never a whole video
        for frames in zip_longest(*(_frames(r) for r in recordings)):
            for k, frame in enumerate(frames):
                counts[k] += frame is not None
            first = frames[0]
            for other in frames[1:]:
                if first is None or other is None:
                    differing += 1  # a frame one rollout has and the other lacks
                    continue
                value = frame_psnr(first, other) if first.shape == other.shape else 0.0
                if value != math.inf:
                    differing += 1
                    psnrs.append(value)
    except (BadInputError, InvalidDataError) as exc:
        return RolloutIdentity(episode, len(recordings), tuple(counts), None, reason=str(exc))
    identical = differing == 0 and len(set(counts)) == 1
    return RolloutIdentity(
        episode,
        len(recordings),
        tuple(counts),
        identical,
        differing,
        round(min(psnrs), 3) if psnrs else None,
        round(float(np.median(psnrs)), 3) if psnrs else None,
    )

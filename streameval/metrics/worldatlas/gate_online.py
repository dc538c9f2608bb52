"""The return gate while the episode runs: 'departure reached' and 'returned', as they happen.

The gate itself (docs/methods.md#memory_return_gate, ``revisit.return_gate``) needs the whole track:
the pose distance divides translation by the trajectory's departure extent E, known only at the end.
While the episode runs the dashboard still wants to see the camera leave and come back, so this
accumulator keeps the poses seen so far and answers, per new frame j, with E so far:

- departure reached: max over t <= j of d(0, t) >= alpha * tau (0.45);
- returned: the nearest frame i at least g frames before j is within tau of it, and the camera
  went at least beta * tau away from i in between (the strict pair test of the kernel, for the
  newest frame).

Both latch: once true they stay true, with the frame where they became true. The work per frame
is O(frames so far) in numpy (one row of distances), never a rebuild of the track; it stops
once both have latched. The values are provisional: E grows, so the final gate (the kernel over
the finished cache, which is also what ``rescore`` runs) can differ in edge cases; on a
rotation-only track (E degenerate throughout) each latch flips exactly where the kernel on the
prefix first says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from streameval.core.metric_result import MetricResult
from streameval.metrics.worldatlas.constants import (
    DEGENERATE_TRANSLATION_EXTENT,
    MAX_PAIR_DISTANCE,
    MIN_DEPARTURE_FACTOR,
    MIN_EXCURSION_FACTOR,
    MIN_GAP_SECONDS,
    ROTATION_WEIGHT,
)
from streameval.metrics.worldatlas.revisit import min_gap_frames

GATE_METRIC = "memory_return_gate"


@dataclass(frozen=True, slots=True)
class GateProgress:
    """The provisional gate state after ``frames`` frames with a pose."""

    frames: int
    departed: bool
    departure_frame: int | None  # frame index where the departure was first reached
    returned: bool
    return_frame: int | None  # frame index of the first revisit
    revisit_of: int | None  # the earlier frame it revisits
    max_departure: float  # max d(0, t) so far, with E so far
    required_departure: float

    def result(self) -> MetricResult:
        """As the live scores carry it: raw 1 once both happened (the final value still comes
        from the kernel at episode end), else no value yet, with the state in the reason."""
        details = {
            "provisional": True,
            "departure_reached": self.departed,
            "departure_frame": self.departure_frame,
            "returned": self.returned,
            "return_frame": self.return_frame,
            "revisit_of": self.revisit_of,
            "max_departure": self.max_departure,
            "required_departure": self.required_departure,
        }
        if self.departed and self.returned:
            return MetricResult(1.0, 1.0, "official", None, details)
        if self.departed:
            why = f"provisional: departed at frame {self.departure_frame}, no return yet"
        else:
            why = (
                f"provisional: not departed yet (max d(0,t) {self.max_departure:.3g} < "
                f"{self.required_departure:.3g})"
            )
        return MetricResult.missing(why, details)


class OnlineReturnGate:
    """Feed camera-to-world poses in frame order with ``update``; read ``progress``."""

    def __init__(
        self,
        fps: float,
        *,
        max_pair_distance: float = MAX_PAIR_DISTANCE,
        min_gap_seconds: float = MIN_GAP_SECONDS,
        rotation_weight: float = ROTATION_WEIGHT,
        min_departure_factor: float = MIN_DEPARTURE_FACTOR,
        min_excursion_factor: float = MIN_EXCURSION_FACTOR,
    ) -> None:
        self._tau = float(max_pair_distance)
        self._weight = float(rotation_weight)
        self._gap = min_gap_frames(max(float(fps), 1e-6), min_gap_seconds)
        self._required_departure = float(min_departure_factor) * self._tau
        self._required_excursion = float(min_excursion_factor) * self._tau
        self._count = 0
        self._index = np.empty(64, dtype=np.int64)  # frame index of each pose kept
        self._positions = np.empty((64, 3))
        self._rotations = np.empty((64, 9))  # flattened: trace(Ri^T Rj) = Ri . Rj
        self._extent = 0.0  # E so far
        self._departure = 0.0
        self._departure_frame: int | None = None
        self._return: tuple[int, int] | None = None  # (revisit frame, earlier frame)

    def update(self, index: int, pose_c2w: ArrayLike) -> None:
        """The pose of frame ``index`` (frames without a pose are simply not given; a
        non-finite pose is skipped, as the kernel would refuse it)."""
        pose = np.asarray(pose_c2w, dtype=np.float64).reshape(4, 4)
        if not np.isfinite(pose).all():
            return
        if self._count == len(self._index):  # amortised O(1): double the buffers
            self._index = np.resize(self._index, 2 * self._count)
            self._positions = np.resize(self._positions, (2 * self._count, 3))
            self._rotations = np.resize(self._rotations, (2 * self._count, 9))
        n = self._count
        self._index[n] = index
        self._positions[n] = pose[:3, 3]
        self._rotations[n] = pose[:3, :3].reshape(9)
        self._count += 1
        positions = self._positions[: self._count]
        self._extent = max(self._extent, float(np.linalg.norm(positions[-1] - positions[0])))
        if self._departure_frame is None:
            self._departure = float(np.max(self._row(0)))
            if self._departure >= self._required_departure:
                self._departure_frame = index
        if self._return is None:
            self._check_return()

    def _row(self, i: int, end: int | None = None) -> np.ndarray:
        """d(i, k) for k < ``end`` (all poses so far by default), with E so far."""
        stop = self._count if end is None else end
        positions = self._positions[:stop]
        rotations = self._rotations[:stop]
        cos = np.clip((rotations @ rotations[i] - 1.0) * 0.5, -1.0, 1.0)
        d = self._weight * np.degrees(np.arccos(cos)) / 180.0
        if self._extent > DEGENERATE_TRANSLATION_EXTENT:
            d = d + np.linalg.norm(positions - positions[i], axis=1) / self._extent
        d[i] = 0.0  # as the kernel: no spurious self-angle from round-off
        return np.asarray(d, dtype=np.float64)

    def _check_return(self) -> None:
        j = self._count - 1
        if j < self._gap:
            return
        to_j = self._row(j)
        candidates = to_j[: j - self._gap + 1]
        i = int(np.argmin(candidates))
        if float(candidates[i]) > self._tau:
            return
        between = self._row(i, end=j)[i + 1 :]
        if between.size and float(np.max(between)) >= self._required_excursion:
            self._return = (int(self._index[j]), int(self._index[i]))

    def progress(self) -> GateProgress:
        return GateProgress(
            frames=self._count,
            departed=self._departure_frame is not None,
            departure_frame=self._departure_frame,
            returned=self._return is not None,
            return_frame=None if self._return is None else self._return[0],
            revisit_of=None if self._return is None else self._return[1],
            max_departure=self._departure,
            required_departure=self._required_departure,
        )

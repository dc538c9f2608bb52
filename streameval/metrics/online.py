"""Online accumulator for the control metrics (SPEC §4, STYLE "Metrics").

It keeps only the per-frame signals (Sx, Srad) and the per-frame key log, in growable arrays,
and scores them with the very same ``control_metrics`` kernel: the value at episode end is
therefore bit-identical to a one-shot call, to ``rescore`` of the cache and to a replay.
Values computed before the end are provisional: v_ref, percentiles and the first/last
stable-zone rules still move as the episode grows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from streameval.core.growable import GrowableArray
from streameval.core.metric_result import MetricResult
from streameval.metrics.control.kernels import MotionType, control_metrics
from streameval.metrics.segments import check_fps
from streameval.protocol.keys import KEYS, NO_KEY, UnknownKeyError, parse_key

_KEY_CODES: tuple[str, ...] = (NO_KEY, *KEYS)
_CODE_OF: dict[str, int] = {key: code for code, key in enumerate(_KEY_CODES)}


def _encode(keys: Sequence[str], first_frame: int) -> NDArray[np.uint8]:
    codes = np.empty(len(keys), dtype=np.uint8)
    for i, raw in enumerate(keys):
        try:
            codes[i] = _CODE_OF[parse_key(raw)]
        except UnknownKeyError as err:
            raise UnknownKeyError(f"frame {first_frame + i}: {err}") from None
    return codes


def _chunk(values: ArrayLike, name: str) -> NDArray[np.float64]:
    a = np.array(values, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"{name} chunk must be 1-D, got shape {a.shape}")
    return a


class ControlAccumulator:
    """Streams Sx/Srad samples and frame keys; ``compute`` scores them with ``control_metrics``.

    Signal i (flow from frame i to i + 2) needs the key of frame i. Keys arrive either with the
    signals (``update(..., keys_chunk)``) or ahead of them, as frames are sent
    (``add_frame_key``); a key already known must not change.
    """

    def __init__(self, fps: float) -> None:
        self._fps = check_fps(fps)
        self._sx = GrowableArray(np.float64)
        self._srad = GrowableArray(np.float64)
        self._keys = GrowableArray(np.uint8)

    @property
    def fps(self) -> float:
        return self._fps

    @property
    def n_signals(self) -> int:
        return len(self._sx)

    @property
    def n_frames(self) -> int:
        """Frames whose key is known (>= ``n_signals``)."""
        return len(self._keys)

    def _put_keys(self, first: int, codes: NDArray[np.uint8]) -> None:
        """Check ``codes`` against the keys known from frame ``first`` on, append the rest."""
        known = self._keys.view()[first : first + codes.size]
        clash = np.flatnonzero(known != codes[: known.size])
        if clash.size:
            frame = first + int(clash[0])
            raise ValueError(
                f"frame {frame}: key {_KEY_CODES[codes[clash[0]]]!r} conflicts with the key "
                f"already recorded, {_KEY_CODES[int(known[clash[0]])]!r}"
            )
        self._keys.extend(codes[known.size :])

    def update(
        self, sx_chunk: ArrayLike, srad_chunk: ArrayLike, keys_chunk: Sequence[str] | None = None
    ) -> None:
        """Append signal samples (NaN = missing) and, optionally, the keys of their frames.

        Atomic: on error (length mismatch, unknown or conflicting key, a sample whose frame key
        is unknown) nothing is appended.
        """
        sx = _chunk(sx_chunk, "sx")
        srad = _chunk(srad_chunk, "srad")
        if sx.size != srad.size:
            raise ValueError(f"sx chunk has {sx.size} samples, srad chunk {srad.size}")
        first = self.n_signals
        if keys_chunk is not None:
            if len(keys_chunk) != sx.size:
                raise ValueError(f"keys chunk has {len(keys_chunk)} keys for {sx.size} samples")
            self._put_keys(first, _encode(keys_chunk, first))
        elif self.n_frames < first + sx.size:
            raise ValueError(
                f"signals {first}..{first + sx.size - 1} need frame keys, only "
                f"{self.n_frames} known: pass keys_chunk or add_frame_key first"
            )
        self._sx.extend(sx)
        self._srad.extend(srad)

    def add_frame_key(self, key: str) -> None:
        """Record the key of the next frame (frames may run ahead of their signals)."""
        self._keys.extend(_encode([key], self.n_frames))

    def set_frame_keys(self, frame_keys: Sequence[str]) -> None:
        """Replace the whole key log (e.g. from an action log); it must cover every signal."""
        if len(frame_keys) < self.n_signals:
            raise ValueError(
                f"{len(frame_keys)} frame keys for {self.n_signals} signals: "
                "signal i needs the key of frame i"
            )
        codes = _encode(frame_keys, 0)
        self._keys.clear()
        self._keys.extend(codes)

    def frame_keys(self) -> list[str]:
        """The key of every known frame."""
        return [_KEY_CODES[c] for c in self._keys.view().tolist()]

    def compute(
        self, motion_types: Mapping[int, MotionType | None] | None = None, *, final: bool = False
    ) -> dict[str, MetricResult]:
        """The eight control columns over everything received so far.

        ``details["provisional"]`` is True unless ``final``; with ``final=True`` the result is
        the episode's value, equal (``==``) to ``control_metrics`` on the same signals.
        """
        return control_metrics(
            self._sx.view(),
            self._srad.view(),
            self.frame_keys(),
            self._fps,
            motion_types,
            provisional=not final,
        )

    def reset(self) -> None:
        """Forget the episode (signals and keys); fps is kept."""
        self._sx.clear()
        self._srad.clear()
        self._keys.clear()

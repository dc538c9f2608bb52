"""Keys the served model does not answer: the most common misconfiguration of ``attach``.

A server that does not understand our keys (wrong ``--profile``, key names, keyCodes) stands
still or keeps doing what it did, and the episode scores direction 0 without saying why. This
watch looks at each closed key segment as the episode runs: did the flow channel the key
drives (``channel_of``: radial for W/S, horizontal for A/D/L/R) move at all? Motion is
judged against a multiple of the still-video floor (``RESPONSE_FLOOR_PX``: codec noise of a
live transport stays under it), in either direction: a model that moves the wrong way *answered* the
key (direction accuracy says how badly); one that never moves on the key's channel did not.

When the first ``WARN_AFTER`` segments with a key all show no such motion, the episode says so
once while it runs (the dashboard's log, the run summary); at the end
``interactivity.keys_ignored`` records whether *no* key segment moved its channel. The scores
stay as measured: the model may really be frozen.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.constants import MOTION_FLOOR_PX
from streameval.protocol.keys import NO_KEY, channel_of

WARN_AFTER = 2
"""Key segments without motion on their channel before the live warning."""
RESPONSE_FLOOR_PX = 5 * MOTION_FLOOR_PX
"""Flow per sample (analysis pixels) a key's channel must clear: five times the still-video
floor. A lossy live transport is noisier than a still file (VP8 at an adapting bitrate on a
standing world measured a few hundredths of a pixel under load); 0.1 px per sample is still
under 1 px/s at 16 fps, far below any motion a key is meant to cause."""
MOVING_SHARE = 0.25
"""A segment moved when this share of its finite samples clears the floor (a late response
still counts; a single noisy sample does not)."""
MESSAGE = "no response to keys: check --profile / --key-map"

Signal = npt.NDArray[Any]
"""A flow channel's samples (the track's growable views, float64 in practice)."""


def segment_moved(signal: Signal, floor: float = RESPONSE_FLOOR_PX) -> bool | None:
    """Whether a key's channel moved over its segment (None: no finite sample to judge)."""
    values = np.asarray(signal, dtype=np.float64)
    finite = np.abs(values[np.isfinite(values)])
    if finite.size == 0:
        return None
    return bool(np.mean(finite >= floor) >= MOVING_SHARE)


class KeysIgnoredWatch:
    """Per-episode state: segments judged, segments that moved, the live warning given."""

    def __init__(self) -> None:
        self.judged = 0
        self.moved = 0
        self.warned = False
        self._start = 0

    def segment(self, key: str, sx: Signal, srad: Signal) -> bool:
        """Judge one closed segment (its samples of both channels); True when the live
        warning is due now (once per episode)."""
        if key == NO_KEY:
            return False
        moved = segment_moved(sx if channel_of(key) == "sx" else srad)
        if moved is None:
            return False
        self.judged += 1
        self.moved += int(moved)
        if not self.warned and self.moved == 0 and self.judged >= WARN_AFTER:
            self.warned = True
            return True
        return False

    def frame_keys_grew(self, keys: list[str], sx: Signal, srad: Signal) -> bool:
        """Called after each perceived frame: a key change closes the segment before it."""
        n = len(keys)
        if n < 2 or keys[-1] == keys[-2]:
            return False
        start, self._start = self._start, n - 1
        return self.segment(keys[-2], sx[start : n - 1], srad[start : n - 1])

    def finish(self, keys: list[str], sx: Signal, srad: Signal) -> bool | None:
        """The last (open) segment judged too; ``keys_ignored`` of the episode: True when no
        judged segment moved, None when none could be judged."""
        if self._start < len(keys):
            self.segment(keys[-1], sx[self._start :], srad[self._start :])
            self._start = len(keys)
        if self.judged == 0:
            return None
        return self.moved == 0

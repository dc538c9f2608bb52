"""The wall-time part of an episode cache on disk (``cache/timing.npz``): when each frame
arrived, when each action change was sent, and every frame a stream-mode session received
(``core/episode/timing.py``'s types).

Read back through the checked ``.npz`` layer (``inputs/npz.py``): a damaged archive is one
``BadInputError`` naming the file and the array. The real-time metrics are kernels over these
arrays (docs/methods.md#real-time-metrics), so ``rescore`` reproduces them bit for bit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.core.atomic import savez_atomic
from streameval.core.episode.timing import ReceivedFrames, TimingCache
from streameval.errors import BadInputError
from streameval.inputs.npz import load_npz, member
from streameval.protocol.keys import KEYS, NO_KEY

CACHE_FILE = "timing.npz"


def save_timing(timing: TimingCache, path: Path) -> None:
    """Write ``timing`` to the archive ``path``."""
    arrays = {
        "arrivals": timing.arrivals,
        "change_times": timing.change_times,
        "change_keys": np.array(timing.change_keys, dtype="<U1"),
    }
    if timing.received is not None:
        arrays.update(_received_arrays(timing.received))
    savez_atomic(path, arrays)


def load_timing(path: Path, frames: int) -> TimingCache:
    """Read and check the archive of an episode of ``frames`` frames."""
    data = load_npz(path)
    arrivals = member(data, "arrivals", path, ndim=1, kind="f")
    times = member(data, "change_times", path, ndim=1, kind="f")
    keys = member(data, "change_keys", path, ndim=1, kind="U")
    if arrivals.size != frames:
        raise BadInputError(path, f"arrivals: {arrivals.size} for {frames} frames")
    if times.size != keys.size:
        raise BadInputError(path, f"{times.size} change times for {keys.size} change keys")
    if np.isinf(arrivals).any() or not np.isfinite(times).all():
        raise BadInputError(path, "times must be finite (NaN only for a frame not received)")
    if times.size and np.any(np.diff(times) < 0):
        raise BadInputError(path, "change times must not decrease")
    bad = set(keys.tolist()) - {*KEYS, NO_KEY}
    if bad:
        raise BadInputError(path, f"unknown keys {sorted(bad)[:5]} in change_keys")
    return TimingCache(
        arrivals.astype(np.float64, copy=False),
        times.astype(np.float64, copy=False),
        [str(k) for k in keys],
        _load_received(data, path) if "received_classes" in data else None,
    )


def _received_arrays(received: ReceivedFrames) -> dict[str, npt.NDArray[Any]]:
    return {
        "received_arrivals": received.arrivals,
        "received_classes": received.classes,
        "received_period": np.array([received.period], dtype=np.int64),
        "session_times": received.session_times,
    }


def _load_received(data: dict[str, npt.NDArray[Any]], path: Path) -> ReceivedFrames:
    arrivals = member(data, "received_arrivals", path, ndim=1, kind="f")
    classes = member(data, "received_classes", path, ndim=1, kind="u")
    period = member(data, "received_period", path, ndim=1, kind="i")
    moments = member(data, "session_times", path, ndim=1, kind="f")
    if arrivals.size != classes.size or period.size != 1 or moments.size != 4:
        raise BadInputError(path, "received frames: arrays of mismatched sizes")
    if (classes.size and int(classes.max()) > 2) or int(period[0]) < 1:
        raise BadInputError(path, "received frames: a class above 2 or a period below 1")
    if not np.isfinite(arrivals).all():
        raise BadInputError(path, "received frames: arrival times must be finite")
    return ReceivedFrames(
        arrivals.astype(np.float64, copy=False),
        classes.astype(np.uint8, copy=False),
        int(period[0]),
        moments.astype(np.float64, copy=False),
    )

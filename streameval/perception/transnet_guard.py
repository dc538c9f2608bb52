"""TransNetV2 in bfloat16 with a float32 guard band: the fast pass decides only the frames it
cannot get wrong.

On a CPU that computes bfloat16 natively (AVX512-BF16 or AMX), OpenVINO runs TransNetV2's
window 4.3× faster than in float32 (0.127 s against 0.540 s on one core here), but its rounding
moves a probability: on the demo's episodes, fades and cuts after H.264, up to 6.8e-3, and up
to 0.048 in logit (a frame 0.014 from the threshold in a fade to black). A decision is
``p > threshold``, so a frame far from the threshold is decided alike by both precisions; a
frame close to it is not safe.

So every window runs in bfloat16 first, and when any *kept* probability (the frames this window
decides; the others come from the neighbouring windows) lies inside the band
``sigmoid(logit(threshold) ± GUARD_LOGIT)``, the window runs again in float32 and the float32
probabilities are the window's result. The band is 1.0 in logit (0.269–0.731 around 0.5),
about 20× the largest bfloat16 logit error measured, and :func:`check_fast_precision` refuses
the fast pass (float32 throughout) on a machine whose bfloat16 misses the float32 reference of
the check clip by more than a quarter of the band. Decisions are therefore those of float32;
only the probabilities of frames far from the threshold carry bfloat16's rounding, and only
``keep_probabilities`` (diagnostics) shows them. Windows with a cut or a fade come back in
float32 (about one window in ten on the demo's ``hard_cut`` episodes, none on clean motion).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from streameval.core.arrays import F64, Image

GUARD_LOGIT = 1.0  # half-width of the band, in logit, around the threshold (bfloat16)
# int8's (transnet_int8.py): it errs by up to ~0.33 logit near the threshold on the clips
# measured (bfloat16: 0.048), so its band is twice as wide (0.119-0.881 around 0.5)
INT8_GUARD_LOGIT = 2.0
CHECK_LOGIT_ERROR = GUARD_LOGIT / 4  # the most the check clip's fast pass may miss by
CHECK_SHARE = 0.25  # ... as a share of its band's half-width
CHECK_RANGE = (0.01, 0.99)  # probabilities whose logit error the check reads (outside: saturated)

Infer = Callable[[Image, bool], F64]  # (uint8 window, at the episode's tail) -> probabilities


def logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def guard_band(threshold: float, guard_logit: float = GUARD_LOGIT) -> tuple[float, float]:
    """The open interval of probabilities the fast pass may not decide. A threshold of 0 or 1
    (or beyond) has no logit: every probability is then in the band."""
    if not 0.0 < threshold < 1.0:
        return (-math.inf, math.inf)
    z = logit(threshold)
    return (sigmoid(z - guard_logit), sigmoid(z + guard_logit))


@dataclass
class GuardedPredict:
    """``fast`` (bfloat16 or int8) on every window; ``exact`` (float32) on a window whose kept
    probabilities touch the band. ``exact_windows`` counts the latter (for the worker's
    stats); ``windows`` counts all."""

    fast: Infer
    exact: Infer
    threshold: float
    kept: slice
    guard_logit: float = GUARD_LOGIT
    band: tuple[float, float] = field(init=False)
    windows: int = 0
    exact_windows: int = 0

    def __post_init__(self) -> None:
        self.band = guard_band(self.threshold, self.guard_logit)

    def __call__(self, window: Image, at_tail: bool) -> F64:
        self.windows += 1
        probs = self.fast(window, at_tail)
        low, high = self.band
        kept = probs[self.kept]
        if bool(((kept > low) & (kept < high)).any()):
            self.exact_windows += 1
            return self.exact(window, at_tail)
        return probs


def check_fast_precision(
    fast: F64,
    exact: F64,
    threshold: float,
    name: str = "bfloat16",
    guard_logit: float = GUARD_LOGIT,
) -> str:
    """Why the fast pass (``name``: bfloat16 or int8) may not be used on this machine ('' when
    it may): its decisions on the check clip differ from float32's, or its logit error on the
    unsaturated frames exceeds a quarter of its band's half-width (``CHECK_LOGIT_ERROR`` for
    bfloat16's)."""
    allowed = guard_logit * CHECK_SHARE
    fast = np.asarray(fast, dtype=np.float64)
    exact = np.asarray(exact, dtype=np.float64)
    if fast.shape != exact.shape:
        return f"the check clip gave {fast.shape[0]} probabilities, not {exact.shape[0]}"
    if not np.array_equal(fast > threshold, exact > threshold):
        return f"{name} decides the check clip differently from float32"
    low, high = CHECK_RANGE
    inside = (exact > low) & (exact < high)
    if not inside.any():
        return ""
    f = np.clip(fast[inside], 1e-12, 1 - 1e-12)
    e = exact[inside]
    error = float(np.abs(np.log(f / (1 - f)) - np.log(e / (1 - e))).max())
    if error > allowed:
        return (
            f"{name} misses float32 by {error:.3f} in logit on the check clip "
            f"(at most {allowed} allowed)"
        )
    return ""

"""One rule for a frame, whoever delivers it (replay decoder, in-process model, transport).

A frame is an H×W×3 uint8 array, at least 16 px a side (the flow needs that much), and every
frame of an episode has the size of the first. A frame that breaks the rule ends the episode
as incomplete with one error naming the frame — the same in ``attach`` and ``replay``, and
once per episode, not once per frame.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streameval.inputs.numbers import FRAME_SIDE


def frame_problem(image: Any, size: tuple[int, int] | None) -> str | None:
    """Why ``image`` is not a usable frame of an episode whose frames are ``size = (h, w)``
    (None: the first frame sets it), or None."""
    if not isinstance(image, np.ndarray):
        return f"is a {type(image).__name__}, expected an H×W×3 uint8 array"
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        got = "×".join(str(d) for d in image.shape)
        return f"is {got} {image.dtype}, expected H×W×3 uint8"
    h, w = int(image.shape[0]), int(image.shape[1])
    if size is not None and (h, w) != size:
        return f"is {h}×{w}, but the episode's frames are {size[0]}×{size[1]} (size changed)"
    if not (FRAME_SIDE.low <= h <= FRAME_SIDE.high and FRAME_SIDE.low <= w <= FRAME_SIDE.high):
        return (
            f"is {h}×{w}, sides must be {FRAME_SIDE.low:g} to {FRAME_SIDE.high:g} px "
            "(too small for optical flow, or not a frame)"
        )
    return None

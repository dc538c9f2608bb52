"""The analysis frame every flow computation sees (SPEC §2: 640×432)."""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

from streameval.constants import ANALYSIS_HEIGHT, ANALYSIS_WIDTH

Gray = npt.NDArray[np.uint8]


def to_analysis_gray(
    image: npt.NDArray[np.uint8], width: int = ANALYSIS_WIDTH, height: int = ANALYSIS_HEIGHT
) -> Gray:
    """RGB frame of any size -> grayscale analysis frame.

    Grey first, then resize: a third of the pixels to resample, and the result differs from
    resize-then-grey only by rounding. INTER_AREA when shrinking (no aliasing shimmer that
    flow would read as motion), INTER_LINEAR when enlarging.
    """
    gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    h, w = gray.shape
    if (w, h) == (width, height):
        return np.ascontiguousarray(gray)
    interp = cv2.INTER_AREA if w > width or h > height else cv2.INTER_LINEAR
    return np.asarray(cv2.resize(gray, (width, height), interpolation=interp), dtype=np.uint8)

"""The analysis frame every flow computation sees (docs/methods.md#analysis-frame-and-flow-units:
640×432)."""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

from streameval.constants import ANALYSIS_HEIGHT, ANALYSIS_WIDTH
from streameval.core.arrays import Image


def to_analysis_rgb(
    image: npt.NDArray[np.uint8], width: int = ANALYSIS_WIDTH, height: int = ANALYSIS_HEIGHT
) -> Image:
    """RGB frame of any size -> the colour analysis frame (bilinear, as the reference): what a
    colour-input flow network (RAFT, SEA-RAFT) is given."""
    h, w = image.shape[:2]
    if (w, h) != (width, height):
        image = np.asarray(
            cv2.resize(image, (width, height), interpolation=cv2.INTER_LINEAR), dtype=np.uint8
        )
    return np.ascontiguousarray(image, dtype=np.uint8)


def rgb_to_gray(rgb: Image) -> Image:
    """The grey of a colour analysis frame (what DIS is given)."""
    return np.ascontiguousarray(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY), dtype=np.uint8)


def to_analysis_gray(
    image: npt.NDArray[np.uint8], width: int = ANALYSIS_WIDTH, height: int = ANALYSIS_HEIGHT
) -> Image:
    """RGB frame of any size -> grayscale analysis frame, as the reference reads frames.

    The reference resizes the *colour* frame to 640×432 with ``cv2.resize``'s default bilinear
    interpolation and hands it to its flow network; a grey-input flow backend (DIS) then gets
    the grey of that frame (docs/methods.md#departures-from-the-reference). Resizing grey with area
    interpolation instead moved
    Sx/Srad by up to 30 % of their peak on real rollouts.
    """
    return rgb_to_gray(to_analysis_rgb(image, width, height))

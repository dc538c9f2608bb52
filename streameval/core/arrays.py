"""The numpy array types every part of streameval annotates with, named once.

Named by dtype, not by meaning: the shape and units of an argument belong in its docstring
(``sx`` is (N,) flow pixels, ``pose`` 4×4 camera-to-world), while the dtype is what a kernel
relies on. ``Image`` and ``Flow`` are the two exceptions, because their dtype alone says what
they hold everywhere they appear.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]
"""The float of every kernel, signal and score computation."""
F32 = NDArray[np.float32]
"""Depth maps, point clouds and renderer buffers, kept in the precision they come in."""
I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]
Indices = NDArray[np.intp]
"""Positions into another array (frame indices, sample indices)."""
Mask = NDArray[np.bool_]
Image = NDArray[np.uint8]
"""An 8-bit image: an RGB frame (H, W, 3) or a grey one (H, W)."""
Flow = NDArray[np.float32]
"""Optical flow (H, W, 2): u (x) and v (y) in analysis pixels."""

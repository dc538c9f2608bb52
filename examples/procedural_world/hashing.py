"""Stateless, vectorised integer hashing: the world is computed on the fly, never stored.

Every property of the infinite scene (is there an object in cell (i, j)? how tall? which
material?) is a hash of the cell coordinates, the world seed, the cell's appearance
generation (bumped by the ``forget`` defect) and a stream number per property. Hashing rather
than an RNG walk makes the answer independent of the order in which cells are first seen,
which is what makes a place look the same when the camera comes back to it.
"""

from __future__ import annotations

import numpy as np

from streameval.core.arrays import F64, I64, U64

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_J = np.uint64(0xC2B2AE3D27D4EB4F)
_MIX_SEED = np.uint64(0x165667B19E3779F9)
_MIX_GEN = np.uint64(0xD6E8FEB86659FD93)
_MIX_STREAM = np.uint64(0xFF51AFD7ED558CCD)


def _splitmix(x: U64) -> U64:
    """The splitmix64 finaliser: a bijection that scatters nearby inputs (wraps mod 2^64)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def cell_hash(i: I64, j: I64, seed: int, generation: I64 | int, stream: int) -> U64:
    """64-bit hash of integer cell coordinates (any sign) for one property ``stream``."""
    iu = np.asarray(i, dtype=np.int64).astype(np.uint64)
    ju = np.asarray(j, dtype=np.int64).astype(np.uint64)
    gu = np.asarray(generation, dtype=np.int64).astype(np.uint64)
    keys = np.array([seed, stream], dtype=np.int64).astype(np.uint64)
    salt = _splitmix(keys[:1] * _MIX_SEED + keys[1:] * _MIX_STREAM)
    x = _splitmix(iu * _GOLDEN + salt)
    x = _splitmix(x ^ (ju * _MIX_J))
    return _splitmix(x ^ (gu * _MIX_GEN))


def cell_uniform(i: I64, j: I64, seed: int, generation: I64 | int, stream: int) -> F64:
    """Uniform [0, 1) per cell from the top 53 bits of its hash."""
    bits = cell_hash(i, j, seed, generation, stream) >> np.uint64(11)
    return bits.astype(np.float64) * (1.0 / 9007199254740992.0)

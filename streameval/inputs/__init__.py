"""The validated input layer: every file, argument and in-process frame passes through here.

An evaluator reads what other people's code wrote. Everything that crosses the boundary is
checked once, here, and every problem becomes one ``BadInputError`` (``streameval.errors``)
carrying the input and the reason, which each command prints as one line (exit status 2)
before going on with its other inputs.

- ``jsonfile``: bounded JSON (size, nesting depth, digits, finite numbers)
- ``numbers``: sane ranges (fps, seconds per key, frame counts, timeouts)
- ``arrays``: ``.npy`` loading without pickles or archives, shapes, rotations, pinhole intrinsics
- ``paths``: names made safe for the file system, output paths kept under ``--out``
- ``schema``: the published JSON Schemas (``streameval/schemas/``) applied to documents
"""

from __future__ import annotations

from streameval.errors import BadInputError

__all__ = ["BadInputError"]

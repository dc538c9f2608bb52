"""Native, repeated and interpolated frames of a received stream, as pure numpy kernels
(docs/methods.md#native-frames).

A server can announce twice its rate and send every frame twice (a "frame-doubling
interpolation"), or insert blends between the frames its model generated: counted as frames,
those would double its speed and shorten its measured latencies. Each received frame is
therefore classified as

- **native** (``NATIVE``): a frame the model generated;
- **repeat** (``REPEAT``): the same content as the previous frame, within codec noise;
- **interpolated** (``INTERPOLATED``): within codec noise of the midpoint of its two
  neighbours (the blend of the previous and the next frame).

Content alone cannot tell a repeat from a still scene: a model whose world does not change (no
key held, a frozen world) sends frames that look alike, and all of them are its own. So a frame
that looks like a repeat or a blend is counted as one only when the stream shows a **cadence**:
over the recent frames whose neighbours differ (frames that carry evidence: something moves),
the look-alikes fall in a regular slot pattern of period P (2: every other frame, 3: two in
three...), the frames in the native slot never look alike, and those in the other slots
always do. A still stretch carries no evidence: it neither makes nor breaks a cadence, and its
frames in a native slot stay native. A stream without a cadence (an honest model, moving or
still) keeps every frame native.

The kernels work on small grey thumbnails (``thumbnail``: a strided area mean, a few
microseconds a frame); ``classify_frames`` is the whole-stream kernel and ``FrameClassifier``
its streaming form (one frame of look-ahead: a frame is classified when the next arrives),
which gives exactly the same classes (``tests/metrics/test_native_frames.py``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from streameval.core.arrays import F32, Image

NATIVE, REPEAT, INTERPOLATED = 0, 1, 2
CLASS_LETTERS = "nri"
"""One letter a frame in a recorded class string: native, repeat, interpolated."""
THUMB_ROWS, THUMB_COLS = 36, 64
"""Thumbnail size: coarse enough that codec noise averages out, fine enough that motion shows."""
THIN_TO = 4
"""Source pixels kept per thumbnail pixel along each axis before the area mean."""
NOISE_LEVELS = 0.8
"""Codec noise: mean absolute difference, in 8-bit grey levels over the thumbnail, under which
two frames have the same content (a JPEG or VP8 re-encode of one picture stays well below it;
one frame of a moving camera is far above it)."""
BLEND_SHARE = 0.15
"""A blend sits within ``max(BLEND_NOISE_LEVELS, BLEND_SHARE × |next − previous|)`` of the
midpoint of its neighbours (a native frame of a moving camera sits at 0.2–0.5 of it)."""
BLEND_NOISE_LEVELS = 0.5 * NOISE_LEVELS
"""The codec noise of one encode of a blend (half a re-encode's: one encode, not two)."""
EVIDENCE_LEVELS = 2.0 * NOISE_LEVELS
"""A frame carries cadence evidence when its two neighbours differ by more than this."""
PERIODS = (2, 3, 4)
"""Cadences looked for: one native frame in 2, 3 or 4 received."""
WINDOW = 48
"""Evidence frames the cadence is judged over (the most recent ones)."""
MIN_SLOT_EVIDENCE = 4
"""Evidence frames needed in the native slot and in the other slots before a cadence holds."""
MAX_MISFIT = 0.1
"""Share of evidence frames allowed to contradict a cadence (a native slot that looks alike,
another slot that does not)."""


def thumbnail(image: Image) -> F32:
    """A (``THUMB_ROWS``, ``THUMB_COLS``) float32 grey thumbnail of an RGB or grey uint8 frame:
    a larger frame is first thinned to ``THIN_TO`` pixels a thumbnail pixel along each axis
    (nearest), then greyed and area-averaged (OpenCV: well under 0.1 ms a frame)."""
    import cv2  # not at import time: importing streameval loads no OpenCV

    h, w = image.shape[:2]
    thin_w, thin_h = THIN_TO * THUMB_COLS, THIN_TO * THUMB_ROWS
    thin: np.ndarray = image
    if h > thin_h and w > thin_w:
        thin = cv2.resize(image, (thin_w, thin_h), interpolation=cv2.INTER_NEAREST)
    grey = cv2.cvtColor(thin, cv2.COLOR_RGB2GRAY) if thin.ndim == 3 else thin
    small = cv2.resize(grey, (THUMB_COLS, THUMB_ROWS), interpolation=cv2.INTER_AREA)
    return np.asarray(small, dtype=np.float32)


def _mad(a: F32, b: F32) -> float:
    """Mean absolute difference in grey levels (float64 sum)."""
    return float(np.abs(a - b).mean(dtype=np.float64))


@dataclass(frozen=True, slots=True)
class FrameContext:
    """What a frame's classification reads of its content: ``diff`` its distance to the
    previous frame (inf for the first), ``blend`` its distance to the midpoint of its
    neighbours and ``span`` theirs to each other (inf: no next frame, or no previous)."""

    diff: float
    blend: float
    span: float

    @property
    def same(self) -> bool:
        return self.diff <= NOISE_LEVELS

    @property
    def blended(self) -> bool:
        return (
            not self.same
            and self.span > EVIDENCE_LEVELS
            and self.blend <= max(BLEND_NOISE_LEVELS, BLEND_SHARE * self.span)
        )

    @property
    def evidence(self) -> bool:
        return bool(np.isfinite(self.span)) and self.span > EVIDENCE_LEVELS

    @property
    def look_alike(self) -> bool:
        return self.same or self.blended


def contexts(thumbs: F32) -> list[FrameContext]:
    """Every frame's ``FrameContext`` from a (T, h, w) stack of thumbnails: the same
    arithmetic as the streaming classifier, frame by frame, so both agree bit for bit."""
    t = thumbs.shape[0]
    out: list[FrameContext] = []
    for i in range(t):
        prev = thumbs[i - 1] if i > 0 else None
        nxt = thumbs[i + 1] if i + 1 < t else None
        out.append(context_of(prev, thumbs[i], nxt, prev))
    return out


def context_of(prev: F32 | None, cur: F32, nxt: F32 | None, before: F32 | None) -> FrameContext:
    """One frame's context from its neighbours (``before``: the previous one, for ``diff``;
    ``prev``/``nxt``: both neighbours, None at an end) — the streaming form of ``contexts``."""
    diff = _mad(cur, before) if before is not None else np.inf
    if prev is None or nxt is None:
        return FrameContext(float(diff), np.inf, np.inf)
    mid = (prev + nxt) * np.float32(0.5)
    return FrameContext(float(diff), _mad(cur, mid), _mad(nxt, prev))


@dataclass(frozen=True, slots=True)
class Cadence:
    """One native frame every ``period`` received, at positions ≡ ``phase`` (mod period)."""

    period: int
    phase: int

    def native_slot(self, position: int) -> bool:
        return position % self.period == self.phase


_COMBOS = np.array([(p, f) for p in PERIODS for f in range(p)], dtype=np.int64)
"""Every (period, phase) a cadence can have, shortest period first."""


def find_cadence(positions: np.ndarray, alike: np.ndarray) -> Cadence | None:
    """The shortest cadence the evidence frames fit (``positions``: their places in the
    stream; ``alike``: whether each looked like a repeat or a blend), or None. A cadence needs
    ``MIN_SLOT_EVIDENCE`` evidence frames in its native slot and as many look-alikes in its
    other slots, and at most ``MAX_MISFIT`` of the evidence against it."""
    pos = np.asarray(positions, dtype=np.int64)
    look = np.asarray(alike, dtype=bool)
    if int(look.sum()) < MIN_SLOT_EVIDENCE:
        return None  # nothing looks alike: no cadence (the common case, an honest stream)
    native = (pos[None, :] % _COMBOS[:, :1]) == _COMBOS[:, 1:]  # (combos, evidence)
    n_native = native.sum(axis=1)
    alike_other = (look & ~native).sum(axis=1)
    misfit = (look & native).sum(axis=1) + (~look & ~native).sum(axis=1)
    fits = (
        (n_native >= MIN_SLOT_EVIDENCE)
        & (alike_other >= MIN_SLOT_EVIDENCE)
        & (misfit <= MAX_MISFIT * pos.size)
    )
    hits = np.flatnonzero(fits)
    if not hits.size:
        return None
    period, phase = _COMBOS[int(hits[0])]
    return Cadence(int(period), int(phase))


def decide(ctx: FrameContext, position: int, cadence: Cadence | None) -> int:
    """A frame's class: a look-alike outside the native slot of a cadence is a repeat (same
    content) or interpolated (a blend); every other frame is native."""
    if cadence is None or cadence.native_slot(position) or not ctx.look_alike:
        return NATIVE
    return REPEAT if ctx.same else INTERPOLATED


class _Evidence:
    """The recent evidence frames and the cadence they show (updated frame by frame)."""

    def __init__(self) -> None:
        self.positions: deque[int] = deque(maxlen=WINDOW)
        self.alike: deque[bool] = deque(maxlen=WINDOW)
        self.cadence: Cadence | None = None

    def add(self, ctx: FrameContext, position: int) -> Cadence | None:
        if ctx.evidence:
            self.positions.append(position)
            self.alike.append(ctx.look_alike)
            self.cadence = find_cadence(
                np.fromiter(self.positions, dtype=np.int64, count=len(self.positions)),
                np.fromiter(self.alike, dtype=bool, count=len(self.alike)),
            )
        return self.cadence


def classify_frames(thumbs: F32, settle: int = 0) -> np.ndarray:
    """Every frame's class (uint8: ``NATIVE``, ``REPEAT``, ``INTERPOLATED``) from the (T, h, w)
    thumbnails of a whole stream, in order: each frame is judged on the cadence of the
    evidence up to and including itself, except the first ``settle`` frames, judged on the
    cadence in force once the ``settle``-th is in (a cadence needs a few frames to show: the
    stream's first frames would be native by default)."""
    ctxs = contexts(thumbs)
    evidence = _Evidence()
    cadences = [evidence.add(ctx, i) for i, ctx in enumerate(ctxs)]
    out = np.zeros(len(ctxs), dtype=np.uint8)
    early = min(settle, len(ctxs)) - 1
    for i, ctx in enumerate(ctxs):
        out[i] = decide(ctx, i, cadences[early] if i < settle else cadences[i])
    return out


class FrameClassifier:
    """The streaming form of ``classify_frames``: ``push`` a frame's thumbnail, get the
    classes of the frames that became final (the previous one: its next neighbour is known;
    the first ``settle`` all at once, when the last of them is); ``flush`` at the end.
    Positions count every frame pushed since the start."""

    def __init__(self, settle: int = 0) -> None:
        self.settle = settle
        self._before: F32 | None = None  # the frame before the pending one
        self._pending: F32 | None = None
        self._position = 0  # of the pending frame
        self._evidence = _Evidence()
        self._early: list[FrameContext] = []  # the first ``settle`` frames, not yet judged
        self.counts = [0, 0, 0]

    @property
    def cadence(self) -> Cadence | None:
        return self._evidence.cadence

    def push(self, thumb: F32) -> list[int]:
        if self._pending is None:
            self._pending = thumb
            return []
        ctx = context_of(self._before, self._pending, thumb, self._before)
        out = self._decide(ctx)
        self._before, self._pending = self._pending, thumb
        return out

    def flush(self) -> list[int]:
        """The last frames' classes (the last has no next neighbour)."""
        out: list[int] = []
        if self._pending is not None:
            ctx = context_of(None, self._pending, None, self._before)
            out = self._decide(ctx)
            self._before, self._pending = self._pending, None
        return out + self._judge_early()

    def _decide(self, ctx: FrameContext) -> list[int]:
        position = self._position
        self._position += 1
        cadence = self._evidence.add(ctx, position)
        if position < self.settle:
            self._early.append(ctx)
            return self._judge_early() if position == self.settle - 1 else []
        cls = decide(ctx, position, cadence)
        self.counts[cls] += 1
        return [cls]

    def _judge_early(self) -> list[int]:
        out = [decide(ctx, i, self.cadence) for i, ctx in enumerate(self._early)]
        self._early = []
        for cls in out:
            self.counts[cls] += 1
        return out


def class_string(classes: np.ndarray) -> str:
    """The classes as one letter a frame (``CLASS_LETTERS``): how a recording keeps them."""
    return "".join(CLASS_LETTERS[int(c)] for c in classes)


def classes_of(letters: str) -> np.ndarray:
    """The inverse of ``class_string`` (an unknown letter raises ``ValueError``)."""
    return np.array([CLASS_LETTERS.index(c) for c in letters], dtype=np.uint8)

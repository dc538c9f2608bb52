"""A case episode: the case record it carries, and whether the model started from the image.

A source that runs a case puts ``case_extra(conditioning, sent)`` into its episode's
``EpisodeInfo.extra``: the case record (what ``scores.json`` keeps of the case) and a
``CaseStart`` (the conditioning and whether it was sent). The pipeline builds a
``FirstFrameCheck`` from that extra and hands it the first frames as they are perceived.

The check compares the first ``FIRST_FRAMES`` frames with the case image and keeps the best
``first_frame_similarity``: a server may open with a frame or two of warm-up (a blank or
fading-in frame, the previous session's last frame while the new one starts), and a first
chunk may already have moved away from the image under a held key. Four frames is a quarter
of a second at 16 fps: long enough to pass a warm-up frame, short enough that a fast key has
not carried the view off the picture (``first_frame_similarity`` allows ~5 % shifts and 10 %
zooms). Taking the best rather than the first keeps one bad frame from calling an honouring
server a liar; a server that ignored the image scores low on all four.

The verdict, ``honoured = similarity >= HONOURED_SIMILARITY``, is known after the fourth
frame (or at the end of a shorter episode). ``record()`` is the ``"conditioning"`` object of
``scores.json``; it goes into the episode cache, so ``rescore`` writes it unchanged, and into
the recording's ``meta.json``, so the replay of a recording carries the live verdict (a
replay has frames but not the case image) and scores bit-identically.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from streameval.cases.conditioning import Conditioning
from streameval.cases.images import HONOURED_SIMILARITY, first_frame_similarity
from streameval.core.arrays import Image
from streameval.errors import StreamevalError

FIRST_FRAMES = 4
"""How many first frames are compared with the case image (the best one counts)."""

NOT_HONOURED = "the first frame does not match the case image: check the profile's conditioning"
"""The warning while the episode runs and in the run summary (scores stay as measured)."""

CASE_KEY = "case"
CONDITIONING_KEY = "conditioning"


@dataclass(frozen=True, slots=True)
class CaseStart:
    """What a source tells the pipeline about a case it runs: the conditioning it was given
    and whether it sent it (an in-process ``reset`` that took it; a profile that rendered
    it). Live only: a recording keeps ``FirstFrameCheck.record()`` instead."""

    conditioning: Conditioning
    sent: bool


def case_extra(conditioning: Conditioning, sent: bool) -> dict[str, Any]:
    """The ``EpisodeInfo.extra`` entries of a case episode (a source merges them into its
    own): the case record and the ``CaseStart`` the first-frame check reads."""
    return {
        CASE_KEY: conditioning.case.record(),
        CONDITIONING_KEY: CaseStart(conditioning, sent),
    }


def not_honoured_message(similarity: float, frames: int) -> str:
    return (
        f"{NOT_HONOURED} (first-frame similarity {similarity:.2f} < {HONOURED_SIMILARITY:g}, "
        f"best of the first {frames} frame{'s' if frames != 1 else ''})"
    )


class FirstFrameCheck:
    """The first-frame check of one episode (see the module docstring).

    Built from ``EpisodeInfo.extra`` by ``for_episode``: a live case (``CaseStart``) is
    measured here; a replayed one (the recorded ``"conditioning"`` object) keeps the record
    it was recorded with.
    """

    def __init__(
        self,
        image: Image | None,
        sent: bool,
        recorded: dict[str, Any] | None = None,
    ) -> None:
        self.image = image
        self.sent = sent
        self.recorded = recorded
        self.best: float | None = None
        self.compared = 0
        self.decided = recorded is not None or image is None

    @classmethod
    def for_episode(cls, extra: dict[str, Any]) -> FirstFrameCheck | None:
        """The check of an episode whose ``extra`` carries a case; None for any other."""
        start = extra.get(CONDITIONING_KEY)
        if isinstance(start, CaseStart):
            conditioning = start.conditioning
            image = conditioning.image() if conditioning.has_image else None
            return cls(image, start.sent)
        if isinstance(start, dict):
            return cls(None, bool(start.get("sent")), recorded=_recorded(start))
        return None

    def add(self, index: int, frame: Image) -> str | None:
        """Compare frame ``index`` when it is one of the first; the warning to give when the
        verdict has just been reached and it is "not honoured", else None."""
        if self.decided or self.image is None:
            return None
        if index < FIRST_FRAMES:
            try:
                score = first_frame_similarity(self.image, frame)
            except StreamevalError:  # a frame the source let through but we cannot compare
                score = 0.0
            self.compared += 1
            self.best = score if self.best is None else max(self.best, score)
        if index >= FIRST_FRAMES - 1:
            return self._decide()
        return None

    def finish(self) -> str | None:
        """At the end of the episode: the verdict of a shorter episode, as ``add``."""
        if self.decided or self.image is None or self.best is None:
            self.decided = True
            return None
        return self._decide()

    def _decide(self) -> str | None:
        self.decided = True
        if self.best is None or self.best >= HONOURED_SIMILARITY:
            return None
        return not_honoured_message(self.best, self.compared)

    def record(self) -> dict[str, Any]:
        """The ``"conditioning"`` object of ``scores.json``: ``sent``,
        ``first_frame_similarity`` (None: no image, or no frame arrived), ``honoured`` (None
        likewise) and ``frames_compared``."""
        if self.recorded is not None:
            return dict(self.recorded)
        similarity = None if self.best is None else float(self.best)
        return {
            "sent": self.sent,
            "first_frame_similarity": similarity,
            "honoured": None if similarity is None else similarity >= HONOURED_SIMILARITY,
            "frames_compared": self.compared,
        }


def _recorded(doc: dict[str, Any]) -> dict[str, Any]:
    """A recorded ``"conditioning"`` object, its fields checked (a recording's meta.json is
    input): anything malformed reads as not measured."""
    similarity = doc.get("first_frame_similarity")
    if not (
        isinstance(similarity, int | float)
        and not isinstance(similarity, bool)
        and math.isfinite(similarity)
        and 0.0 <= similarity <= 1.0
    ):
        similarity = None
    honoured = doc.get("honoured")
    frames = doc.get("frames_compared")
    return {
        "sent": bool(doc.get("sent")),
        "first_frame_similarity": None if similarity is None else float(similarity),
        "honoured": honoured if isinstance(honoured, bool) and similarity is not None else None,
        "frames_compared": frames if isinstance(frames, int) and 0 <= frames <= 100 else 0,
    }


def honoured_of(record: dict[str, Any] | None) -> bool | None:
    """``honoured`` of a ``"conditioning"`` object (None: not judged)."""
    if not isinstance(record, dict):
        return None
    value = record.get("honoured")
    return value if isinstance(value, bool) else None


_RECORD_FIELDS = ("name", "set", "image", "action", "keys", "image_sha256", "prompt_sha256")
_MAX_TEXT = 1000


def case_record_of(extra: dict[str, Any]) -> dict[str, Any] | None:
    """The case record of an episode (``extra["case"]``), or None for an episode that runs no
    case. A replayed recording's record is input: only its known fields, of JSON scalar
    types, are kept, and one without a ``name`` and a ``set`` is no record."""
    doc = extra.get(CASE_KEY)
    if not isinstance(doc, dict):
        return None
    name, set_name = doc.get("name"), doc.get("set")
    if not all(isinstance(v, str) and 0 < len(v) <= _MAX_TEXT for v in (name, set_name)):
        return None
    record: dict[str, Any] = {}
    for field in _RECORD_FIELDS:
        value = doc.get(field)
        if isinstance(value, str):
            value = value[:_MAX_TEXT]
        elif isinstance(value, bool) or not isinstance(value, int | None):
            value = None
        record[field] = value
    trajectory = doc.get("trajectory")
    if isinstance(trajectory, str):
        record["trajectory"] = trajectory[:_MAX_TEXT]
    elif isinstance(trajectory, list) and all(isinstance(t, str) for t in trajectory):
        record["trajectory"] = [t[:_MAX_TEXT] for t in trajectory[:_MAX_TEXT]]
    # the camera the geometry uses (metrics.fits.camera): four finite numbers, two sides
    intrinsics: Any = doc.get("intrinsics")
    size: Any = doc.get("image_size")
    if _numbers(intrinsics, 4, float):
        record["intrinsics"] = [float(v) for v in intrinsics]
        if _numbers(size, 2, int):
            record["image_size"] = [int(v) for v in size]
    return record


def _numbers(value: Any, count: int, kind: type) -> bool:
    """``value`` is a list of ``count`` finite numbers (integers when ``kind`` is int)."""
    if not isinstance(value, list | tuple) or len(value) != count:
        return False
    ok = (int,) if kind is int else (int, float)
    return all(isinstance(v, ok) and not isinstance(v, bool) and math.isfinite(v) for v in value)

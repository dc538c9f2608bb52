"""At episode end: the closed-loop metrics' revisit frames and what the backends say of them.

The pose track is complete only now, so only now are the ≤ 24 scored pairs known
(``closed_loop_pairs``, docs/methods.md#memory_return_gate). Their ≤ 48 frames are decoded from
what ``WorldAtlasTrack`` kept, and the two network-capable parts are run once, here, on them:
the appearance backend (the episode's embedding backend: ``cpu-colorhist-rbf`` by default,
``dinov2-base`` with weights; docs/methods.md#memory_revisit_fidelity) and the Gram backend
(``cpu-filterbank-gram`` by default, ``vgg16-gram``/``vgg19-gram`` with weights;
docs/methods.md#memory_rendering_recovery). Their answers go into the cache with the frames,
so scoring, replay and ``rescore`` never re-run a network and agree bit for bit.

Pairs share frames (the square loop's 23 pairs hold 24 distinct frames), so each distinct frame
is embedded once and its Gram statistic taken once (``gram.pair_distances``): an embedding is a
function of its frame alone (the backends embed one image per pass), so the features are those
of a pair-by-pair run, bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.core.arrays import Image
from streameval.core.episode.closed_loop import ClosedLoopFrames
from streameval.engine.track import WorldAtlasTrack
from streameval.errors import PoseTrackError
from streameval.metrics.worldatlas.closed_loop import resize_like
from streameval.metrics.worldatlas.closed_loop_scores import closed_loop_pairs
from streameval.metrics.worldatlas.pose_distance import as_pose_track
from streameval.metrics.worldatlas.revisit import return_gate
from streameval.perception.embedding import EmbeddingBackend
from streameval.perception.gram import GramBackend, pair_distances
from streameval.results.cache.closed_loop import CLOSED_LOOP_FRAME_SIDE


def _decode(jpeg: bytes) -> Image:
    import cv2

    bgr = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    if bgr is None:  # our own JPEG of a frame we received: only a bug gets here
        raise ValueError("a kept revisit frame does not decode")
    return np.asarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), dtype=np.uint8)


def keep_revisit_frames(
    track: WorldAtlasTrack,
    frames: int,
    fps: float,
    embedder: EmbeddingBackend | None,
    gram: GramBackend | None,
) -> ClosedLoopFrames | None:
    """The scored pairs' frames with features and Gram distances; None without a usable pose
    track (the kernel then says why) or when no frame was kept."""
    poses = track.pose_track(frames)
    if poses is None or not track.frames:
        return None
    try:
        pose_track = as_pose_track(poses)
    except PoseTrackError:
        return None
    pairs, _ = closed_loop_pairs(return_gate(pose_track, fps=fps), pose_track)
    index = pairs[:, :2].astype(np.int64)
    wanted = sorted({int(i) for i in index.ravel()})
    kept = {i: _decode(track.frames[i]) for i in wanted if i in track.frames}
    out = ClosedLoopFrames(
        pairs=index,
        frames=kept,
        frame_side=CLOSED_LOOP_FRAME_SIDE,
        intrinsics={i: track.frame_intrinsics[i] for i in kept if i in track.frame_intrinsics},
    )
    if len(kept) < len(wanted) or not len(index):
        return out  # the kernel reports the frames that never arrived
    firsts = [kept[int(i)] for i in index[:, 0]]
    revisits = [resize_like(kept[int(j)], kept[int(i)]) for i, j in index]
    if embedder is not None:
        out.feature_backend = embedder.name
        try:
            out.features = _pair_features(embedder, firsts, revisits)
        except Exception as exc:  # fidelity becomes `missing`, with this reason
            out.feature_problem = f"{embedder.name}: {type(exc).__name__}: {exc}"
    if gram is not None:
        out.gram_backend = gram.name
        try:
            out.gram = np.array(pair_distances(gram, firsts, revisits), np.float64)
        except Exception as exc:  # recorded; rendering recovery keeps its two CIELAB terms
            out.gram_problem = f"{gram.name}: {type(exc).__name__}: {exc}"
    return out


def _pair_features(
    embedder: EmbeddingBackend, firsts: list[Image], revisits: list[Image]
) -> npt.NDArray[np.float32]:
    """(P, 2, D) features of the pairs, each distinct frame (the same array object) embedded
    once, in one call, in order of first appearance."""
    distinct: dict[int, Image] = {}
    for frame in [*firsts, *revisits]:
        distinct.setdefault(id(frame), frame)
    rows = dict(zip(distinct, embedder.embed(list(distinct.values())), strict=True))
    return np.stack(
        [np.stack([rows[id(a)], rows[id(b)]]) for a, b in zip(firsts, revisits, strict=True)]
    ).astype(np.float32)


def closed_loop_provenance(kept: ClosedLoopFrames | None) -> dict[str, Any]:
    """The backends the closed-loop metrics were measured with, for scores.json provenance."""
    if kept is None:
        return {"closed_loop_features": None, "closed_loop_gram": None}
    return {"closed_loop_features": kept.feature_backend, "closed_loop_gram": kept.gram_backend}

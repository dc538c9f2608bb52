"""``rescore``: recompute every score from the episode cache, without touching the video."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from streameval.core.episode.cache import EpisodeCache
from streameval.core.episode.quality import QualityCache, QualityRatings
from streameval.engine.scoring import episode_document, score_episode
from streameval.errors import BadInputError, one_line
from streameval.inputs.jsonfile import read_json_file
from streameval.inputs.paths import present
from streameval.metrics.quality.kernels import one_fps_frames
from streameval.metrics.runtime import runtime_block
from streameval.results.cache.episode import load_episode_cache, save_episode_cache
from streameval.results.scores_file import SCORES_FILE, write_scores

if TYPE_CHECKING:  # Q-Align (transformers, OpenCV) loads only when a rerating asks for it
    from streameval.perception.qalign import QAlign

CACHE_DIR = "cache"


@dataclass(frozen=True, slots=True)
class RescoreOutcome:
    results_dir: Path
    changed: list[str]  # metric names whose value differs from the scores.json found


def find_results_dirs(path: Path) -> list[Path]:
    """``path`` itself if it is a results dir, else every results dir below it (sorted).

    A results dir is one with ``cache/`` or ``scores.json``: one whose cache is gone is still
    returned, so that ``rescore_dir`` reports it instead of skipping it without a word.
    """
    if _is_results_dir(path):
        return [path]
    if not path.is_dir():
        raise BadInputError(path, "no such results directory")
    try:
        found = {p.parent for p in path.rglob(CACHE_DIR) if _is_results_dir(p.parent)}
        found |= {p.parent for p in path.rglob(SCORES_FILE) if _is_results_dir(p.parent)}
    except OSError as exc:
        raise BadInputError(path, f"cannot list ({one_line(exc.strerror or str(exc))})") from None
    # recording/ and cache/ sit inside a results dir; nothing below them is an episode
    dirs = sorted(d for d in found if not {"cache", "recording"} & set(d.relative_to(path).parts))
    if not dirs:
        raise BadInputError(path, "no episode cache (cache/episode.json) found below it")
    return dirs


def _is_results_dir(path: Path) -> bool:
    return present(path / CACHE_DIR) or present(path / SCORES_FILE)


def rerate(cache: EpisodeCache, backend: QAlign, cache_dir: Path) -> None:
    """Rate the cache's 1-fps frames with ``backend`` and store the answers in the cache."""
    quality = cache.quality
    if quality is None or not quality.frames:
        raise BadInputError(cache_dir, "no 1-fps frames in this cache for Q-Align to rate")
    wanted = one_fps_frames(len(cache.frame_keys), cache.fps)
    lost = [i for i in wanted if i not in quality.frames]
    if lost:  # as a live run: a video with holes is not rated as if it were whole
        cache.quality = QualityCache(
            quality.frames,
            quality.statistics,
            failure=f"{len(wanted) - len(lost)} of {len(wanted)} 1-fps frames received",
        )
    else:
        from streameval.perception.qalign import rate_episode

        logits, segments = rate_episode(backend, [quality.frames[i] for i in wanted])
        cache.quality = QualityCache(
            quality.frames, quality.statistics, QualityRatings(backend.name, logits, segments)
        )
    backends = cache.meta.setdefault("provenance", {}).setdefault("backends", {})
    backends["quality"] = backend.name
    save_episode_cache(cache, cache_dir)  # frames, statistics, new answers: atomic per file


def rescore_dir(results_dir: Path, *, quality: QAlign | None = None) -> RescoreOutcome:
    """Re-run the kernels on ``results_dir/cache`` and rewrite ``scores.json``.

    With ``quality``, Q-Align first rates the cached 1-fps frames (no video needed) and its
    answers replace those in the cache; without, the cached answers are scored again."""
    cache_dir = results_dir / CACHE_DIR
    if not cache_dir.is_dir():
        raise BadInputError(cache_dir, "missing: nothing to rescore (was this episode finished?)")
    cache = load_episode_cache(cache_dir)
    if quality is not None:
        rerate(cache, quality, cache_dir)
    scores = score_episode(cache)
    doc = episode_document(cache.meta, scores, len(cache.frame_keys), runtime_block(cache))
    old_path = results_dir / SCORES_FILE
    changed: list[str] = []
    if old_path.is_file():
        try:
            old_doc = read_json_file(old_path)
        except BadInputError:
            old_doc = {}  # unreadable: every metric counts as changed, and the file is replaced
        old = old_doc.get("metrics", {}) if isinstance(old_doc, dict) else {}
        old = old if isinstance(old, dict) else {}
        changed = [k for k, v in doc["metrics"].items() if old.get(k) != v]
    write_scores(results_dir, doc)
    return RescoreOutcome(results_dir, changed)
